"""Load function_app.py and index it exactly as the Python worker does."""
