"""`funchost start` collects the youngest generation after 2 000 net allocations, as Python 3.13
does, unless the threshold is not the interpreter's default."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from funchost.cli.start import (
    PYTHON_311_YOUNG_THRESHOLD,
    PYTHON_313_YOUNG_THRESHOLD,
    young_generation_as_in_python_313,
)


@pytest.fixture
def threshold() -> Iterator[None]:
    before = gc.get_threshold()
    try:
        yield
    finally:
        gc.set_threshold(*before)


@pytest.mark.usefixtures("threshold")
def test_the_default_young_threshold_becomes_python_313s_and_the_older_generations_keep_theirs() -> None:
    gc.set_threshold(PYTHON_311_YOUNG_THRESHOLD, 12, 15)
    young_generation_as_in_python_313()
    assert gc.get_threshold() == (PYTHON_313_YOUNG_THRESHOLD, 12, 15)


@pytest.mark.usefixtures("threshold")
@pytest.mark.parametrize("chosen", [0, 100, 5000])  # 0: collection off (gc.disable() leaves it as is)
def test_a_threshold_someone_chose_is_left_alone(chosen: int) -> None:
    gc.set_threshold(chosen, 10, 10)
    young_generation_as_in_python_313()
    assert gc.get_threshold() == (chosen, 10, 10)
