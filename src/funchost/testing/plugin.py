"""pytest plugin entry point (registered as `funchost` in pytest11)."""
