"""Test-suite plugins: Azurite and PostgreSQL servers, started once per run on 127.0.0.1."""

import os

pytest_plugins = ["tests.support.azurite_fixtures", "tests.support.postgres_fixtures"]

# `funchost start` serves the storage endpoints on 10000-10002 by default; the suite starts many
# hosts on different data folders at once, so they are off unless a test asks for them
# (`--storage-ports 0,0,0` or the setting in the app).
os.environ.setdefault("FUNCHOST_STORAGE_ENDPOINTS", "off")
# Likewise the AMQP endpoint (5672): tests that use it pass `--amqp-port` with a free port.
os.environ.setdefault("FUNCHOST_AMQP_ENDPOINT", "off")
