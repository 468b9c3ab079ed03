"""Human labels: people's ratings, label files in and out, re-scoring with them, the review sample."""
