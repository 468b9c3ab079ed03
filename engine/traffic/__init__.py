"""What people search: query logs in, query sets sampled by traffic, traffic-weighted figures."""
