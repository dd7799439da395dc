"""The time zone timer schedules are evaluated in: ``WEBSITE_TIME_ZONE`` / ``TZ``, default UTC.

Azure accepts Windows zone names (``Eastern Standard Time``) and, on Linux plans, IANA names
(``America/New_York``). funchost accepts IANA names and maps the common Windows names to
their IANA equivalent (the CLDR "001" territory mapping); anything else is a clear error.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from funchost.errors import ConfigError

UTC = ZoneInfo("UTC")

WINDOWS_ZONES: dict[str, str] = {
    "UTC": "UTC",
    "Coordinated Universal Time": "UTC",
    "GMT Standard Time": "Europe/London",
    "Greenwich Standard Time": "Atlantic/Reykjavik",
    "W. Europe Standard Time": "Europe/Berlin",
    "Central Europe Standard Time": "Europe/Budapest",
    "Central European Standard Time": "Europe/Warsaw",
    "Romance Standard Time": "Europe/Paris",
    "E. Europe Standard Time": "Europe/Chisinau",
    "FLE Standard Time": "Europe/Kiev",
    "GTB Standard Time": "Europe/Bucharest",
    "Russian Standard Time": "Europe/Moscow",
    "Turkey Standard Time": "Europe/Istanbul",
    "Israel Standard Time": "Asia/Jerusalem",
    "South Africa Standard Time": "Africa/Johannesburg",
    "Arabian Standard Time": "Asia/Dubai",
    "India Standard Time": "Asia/Kolkata",
    "SE Asia Standard Time": "Asia/Bangkok",
    "China Standard Time": "Asia/Shanghai",
    "Singapore Standard Time": "Asia/Singapore",
    "Taipei Standard Time": "Asia/Taipei",
    "Tokyo Standard Time": "Asia/Tokyo",
    "Korea Standard Time": "Asia/Seoul",
    "AUS Eastern Standard Time": "Australia/Sydney",
    "E. Australia Standard Time": "Australia/Brisbane",
    "Cen. Australia Standard Time": "Australia/Adelaide",
    "W. Australia Standard Time": "Australia/Perth",
    "New Zealand Standard Time": "Pacific/Auckland",
    "Hawaiian Standard Time": "Pacific/Honolulu",
    "Alaskan Standard Time": "America/Anchorage",
    "Pacific Standard Time": "America/Los_Angeles",
    "US Mountain Standard Time": "America/Phoenix",
    "Mountain Standard Time": "America/Denver",
    "Central Standard Time": "America/Chicago",
    "Eastern Standard Time": "America/New_York",
    "Atlantic Standard Time": "America/Halifax",
    "Newfoundland Standard Time": "America/St_Johns",
    "E. South America Standard Time": "America/Sao_Paulo",
    "Argentina Standard Time": "America/Buenos_Aires",
    "SA Pacific Standard Time": "America/Bogota",
    "Central Standard Time (Mexico)": "America/Mexico_City",
    "Canada Central Standard Time": "America/Regina",
}
_WINDOWS_FOLDED = {k.lower(): v for k, v in WINDOWS_ZONES.items()}


def resolve_time_zone(settings: Mapping[str, str]) -> tzinfo:
    """The zone from app settings (WEBSITE_TIME_ZONE wins over TZ); UTC when neither is set."""
    for key in ("WEBSITE_TIME_ZONE", "TZ"):
        value = settings.get(key)
        if value and value.strip():
            name = value.strip()
            if key == "TZ":  # POSIX forms: ":Europe/Berlin", ":/usr/share/zoneinfo/Europe/Berlin"
                name = name.lstrip(":")
                if "zoneinfo/" in name:
                    name = name.split("zoneinfo/", 1)[1]
            return zone_by_name(name, setting=key)
    return UTC


def zone_by_name(name: str, *, setting: str = "WEBSITE_TIME_ZONE") -> tzinfo:
    iana = _WINDOWS_FOLDED.get(name.lower(), name)
    try:
        return ZoneInfo(iana)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(
            f"unknown time zone {name!r}: use an IANA name such as 'Europe/Berlin' or one of the "
            f"Windows names funchost maps (e.g. 'W. Europe Standard Time', 'Eastern Standard Time')",
            path=f"app setting {setting}",
        ) from None


def zone_name(zone: tzinfo) -> str:
    return getattr(zone, "key", None) or str(zone)
