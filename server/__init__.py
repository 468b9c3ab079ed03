"""What runs behind the app's screens: background jobs, the login, uploads, whether it is exposed."""
