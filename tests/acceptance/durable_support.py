"""The async HTTP pattern of Durable Functions as a client follows it, for the acceptance tests."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
from tests.acceptance.support import RunningHost


def started(response: httpx.Response) -> str:
    """The status URL of a 202 answer from an HTTP starter (``create_check_status_response``)."""
    assert response.status_code == 202, response.text
    links = response.json()
    assert response.headers["location"] == links["statusQueryGetUri"]
    assert set(links) >= {"id", "statusQueryGetUri", "sendEventPostUri", "terminatePostUri", "purgeHistoryDeleteUri"}
    return str(links["statusQueryGetUri"])


def poll(host: RunningHost, status_url: str, timeout: float = 60.0) -> dict[str, Any]:
    """Follow the async HTTP pattern: 202 while running (Location + Retry-After), then 200."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        response = httpx.get(status_url, timeout=10)
        body = response.json()
        if response.status_code == 202:
            assert response.headers["location"] == status_url and response.headers["retry-after"] == "5"
            assert body["runtimeStatus"] in ("Pending", "Running")
            time.sleep(0.1)
            continue
        assert response.status_code == 200, response.text
        return body  # type: ignore[no-any-return]
    pytest.fail(f"the orchestration did not finish within {timeout}s\n{host.output()[-3000:]}")
