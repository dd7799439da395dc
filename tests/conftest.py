"""Test-suite plugins: Azurite and PostgreSQL servers, started once per run on 127.0.0.1."""

pytest_plugins = ["tests.support.azurite_fixtures", "tests.support.postgres_fixtures"]
