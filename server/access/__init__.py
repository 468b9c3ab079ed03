"""Who may reach the app's server: the logins of this process (sessions.py) and the gate in front of
Streamlit's server that holds every request and websocket message to them (gate.py)."""
