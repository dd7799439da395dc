"""host.json ``extensions.eventGrid``.

The Event Grid extension reads no options of its own (its webhook is configured through the
HTTP section), so the section must be empty: any key in it is reported with its path.
"""

from __future__ import annotations

from dataclasses import dataclass

from funchost.settings.sections import SectionReader


@dataclass(frozen=True)
class EventGridOptions:
    """No settings: kept as a type so `HostOptions.extension("eventGrid")` is uniform."""


def parse(reader: SectionReader) -> EventGridOptions:
    return EventGridOptions()
