"""Shared test support: external services (Azurite) and their pytest fixtures."""
