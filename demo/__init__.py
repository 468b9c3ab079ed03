"""The bundled demo collection (BEIR SciFact with its vectors): data only, see README.md here."""
