"""`funchost start`'s stop signals: a repeat within a moment is the same request, later it forces."""

from __future__ import annotations

from funchost.cli.start import DUPLICATE_SIGNAL_WINDOW, StopRequests


def test_a_signal_repeated_within_the_window_is_the_same_stop_request() -> None:
    requests = StopRequests()
    assert requests.on_signal(100.0) == "stop"
    assert requests.on_signal(100.0 + DUPLICATE_SIGNAL_WINDOW / 2) == "duplicate"
    assert requests.on_signal(100.0 + DUPLICATE_SIGNAL_WINDOW) == "force"
