"""The app's screens (one module each, run by app.py's st.navigation) and the widgets they share."""
