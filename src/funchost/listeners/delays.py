"""Delay strategies shared by the queue listener, change feed, outbox, retries.

`RandomizedExponentialBackoff` reproduces WebJobs' RandomizedExponentialBackoffStrategy
(azure-semantics 1.3 and 5.3) step for step, including its randomization factor of 0.2.
"""

from __future__ import annotations

import random
from typing import Protocol


class DelayStrategy(Protocol):
    def next_delay(self, succeeded: bool) -> float:
        """Seconds to wait next; `succeeded` says whether the last attempt found work."""


class FixedDelay:
    def __init__(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("delay must be >= 0")
        self.seconds = seconds

    def next_delay(self, succeeded: bool) -> float:
        return self.seconds


class RandomizedExponentialBackoff:
    """min, then min + r*2^(k-1)*delta with r in [0.8, 1.2), capped at max until a success."""

    RANDOMIZATION_FACTOR = 0.2

    def __init__(
        self,
        minimum: float,
        maximum: float,
        delta: float | None = None,
        rng: random.Random | None = None,
    ) -> None:
        if minimum < 0 or maximum < minimum:
            raise ValueError("need 0 <= minimum <= maximum")
        self.minimum = minimum
        self.maximum = maximum
        self.delta = minimum if delta is None else delta
        self._rng = rng or random.Random()
        self._current = 0.0
        self._exponent = 0

    @property
    def current(self) -> float:
        return self._current

    def next_delay(self, succeeded: bool) -> float:
        if succeeded:
            self._current = self.minimum
            self._exponent = 1
        elif self._current != self.maximum:
            candidate = self.minimum
            if self._exponent > 0:
                factor = self._rng.random() * 2 * self.RANDOMIZATION_FACTOR + (1 - self.RANDOMIZATION_FACTOR)
                candidate += factor * (2 ** (self._exponent - 1)) * self.delta
            if candidate < self.maximum:
                self._current = candidate
                self._exponent += 1
            else:
                self._current = self.maximum
        return self._current


class LinearSpeedup:
    """Renewal timing (WebJobs LinearSpeedupStrategy): `normal` after success, halved after each
    failure down to `minimum`."""

    def __init__(self, normal: float, minimum: float) -> None:
        self.normal = normal
        self.minimum = minimum
        self._current = normal

    def next_delay(self, succeeded: bool) -> float:
        if succeeded:
            self._current = self.normal
        else:
            self._current = max(self.minimum, self._current / 2)
        return self._current
