"""Values as the report's charts and page state them: bytes and durations in human units, instants in UTC, clients
by user and client id."""

import datetime
from collections.abc import Mapping
from typing import Any

UTC = datetime.timezone.utc


def utc(seconds: float | None) -> datetime.datetime | None:
    """An instant collected as UTC epoch seconds (report_data collects them so), as an aware datetime;
    None stays None."""
    return None if seconds is None else datetime.datetime.fromtimestamp(seconds, tz=UTC)


def human_bytes(value: float | None) -> str:
    if value is None:
        return "-"
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(size) < 1024.0 or unit == "PiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024.0
    return f"{size:.1f} PiB"


def human_hours(hours: float | None) -> str:
    if hours is None:
        return "never"
    if hours < 0:
        return "already past"
    if hours < 1:
        return f"{hours * 60:.0f} minutes"
    if hours < 48:
        return f"{hours:.1f} hours"
    return f"{hours / 24:.1f} days"


def or_placeholder(value: str | None, placeholder: str) -> str:
    """``placeholder`` for a missing or empty name (a client without user or client id), else the name."""
    return placeholder if value in (None, "") else value


def client_label(client: Mapping[str, Any]) -> str:
    text = f"{or_placeholder(client['user'], '(no user)')} / {or_placeholder(client['client_id'], '(no client id)')}"
    return text if len(text) <= 48 else text[:47] + "\u2026"
