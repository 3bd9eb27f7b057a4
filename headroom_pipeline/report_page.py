"""The report's page, index.html: the Jinja2 template templates/report.html.j2 filled from report_data's data.

The template is rendered with autoescaping, so every value read from the outputs (cluster names, log dirs, client
ids, topics) is escaped as it is put in; the page has no JavaScript and no external assets. Here the values become
what the page shows (units, instants, table rows); the template says where.
"""

import collections
import html
import pathlib
from typing import Any

import jinja2
import markupsafe

from headroom_pipeline.report_data import NEXT_VOLUMES, ReportData
from headroom_pipeline.report_format import client_label, human_bytes, human_hours, or_placeholder

# Beside this file, in the package: it ships wherever the package does (the Galaxy artifact included).
TEMPLATES = pathlib.Path(__file__).resolve().with_name("templates")
TEMPLATE = "report.html.j2"

Table = collections.namedtuple("Table", "headers rows numeric")  # numeric: the indexes of right-aligned columns


def render(
    summary: dict[str, Any] | None, data: ReportData, charts: list[dict[str, Any]], clients_chart: str | None
) -> str:
    """The page of ``data`` (report_data.ReportData), with the charts report_charts.draw wrote."""
    clients = data.clients
    return _ENVIRONMENT.get_template(TEMPLATE).render(
        next_volume_count=NEXT_VOLUMES,
        next_volumes=data.next_volumes,
        crossing=[volume for volume in data.next_volumes or [] if volume["crosses_hard_limit_at"] is not None],
        not_open=data.not_open,
        clients=clients,
        over_quota=[client for client in clients["top"] if client["peak"] is not None and client["peak"] > 1.0]
        if clients
        else [],
        count_tables=_count_tables(summary or {}),
        volume_table=_volume_table(data.next_volumes or []),
        sizing_interval=((summary or {}).get("settings") or {}).get("check_interval"),
        charts=charts,
        cluster_count=data.cluster_count,
        clients_chart=clients_chart,
        client_table=_client_table(clients) if clients else None,
        topics=data.topics,
        topic_table=_topic_table(data.topics or []),
        links=data.links,
        guard=data.guard,
        guard_figures=_guard_figures(data.guard["figures"]) if data.guard else "",
        guard_table=_guard_table(data.guard["differences"]) if data.guard else None,
    )


def _when(moment):
    return "never" if moment is None else moment.strftime("%Y-%m-%d %H:%M UTC")


def _instant(moment):
    """To the millisecond, as the guard stamps its decisions."""
    return "-" if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def _number(value):
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.3f}".rstrip("0").rstrip(".")
    return f"{value:,}" if isinstance(value, int) else str(value)


def _limit_text(limit_type, level):
    """A limit as its type reads: bytes for min_free_bytes and consumed_space, percent for min_free_percentage."""
    if limit_type is None or level is None:
        return "-"
    if limit_type == "min_free_percentage":
        return f"{limit_type} {_number(float(level))}%"
    return f"{limit_type} {human_bytes(level)}"


def _per_day(volume):
    return None if volume["bytes_per_hour"] is None else volume["bytes_per_hour"] * 24.0


def _plugin_limit_first(volume):
    """Whether the shipped plugin's own limit comes first: that is when produce stops, and the page says so."""
    crossing = volume["crosses_plugin_limit_at"]
    return crossing is not None and (
        volume["crosses_hard_limit_at"] is None or crossing < volume["crosses_hard_limit_at"]
    )


def _short_limits(volume):
    """The limits that do not cover the volume's peak fill rate (forecast step 9), or "-"."""
    short = [
        name
        for name, covers in (("plugin", volume["plugin_limit_covers_peak"]), ("hard", volume["hard_limit_covers_peak"]))
        if covers is False
    ]
    return ", ".join(short) or "-"


def _rate(bytes_per_second):
    return "-" if bytes_per_second is None else human_bytes(bytes_per_second) + "/s"


def _count_tables(summary):
    inputs = summary.get("inputs") or {}
    rows = [
        (name, figures.get("read"), figures.get("used"), figures.get("rejected"))
        for name, figures in sorted(inputs.items())
    ]
    rows.append(("total", summary.get("rows_read"), summary.get("rows_used"), summary.get("rows_rejected")))
    tables = [
        Table(
            ["input", "records read", "used", "rejected"], [(row[0], *map(_number, row[1:])) for row in rows], (1, 2, 3)
        )
    ]
    stages = summary.get("stages") or {}
    stage_rows = [
        (stage, key, _number(value))
        for stage, figures in sorted(stages.items())
        if isinstance(figures, dict)
        for key, value in sorted(figures.items())
    ]
    if stage_rows:
        tables.append(Table(["stage", "count", "value"], stage_rows, (2,)))
    timings = summary.get("timings_seconds") or {}
    if timings:
        tables.append(Table(["step", "seconds"], [(step, _number(seconds)) for step, seconds in timings.items()], (1,)))
    return tables


def _volume_table(next_volumes):
    rows = [
        (
            volume["rank"],
            volume["cluster"],
            volume["broker_id"],
            volume["log_dir"],
            human_bytes(volume["usable_bytes"]),
            human_bytes(volume["total_bytes"]),
            human_bytes(volume["hard_limit_usable_bytes"]),
            _limit_text(volume["hard_limit_type"], volume["hard_limit_level"]),
            human_bytes(_per_day(volume)),
            _when(volume["crosses_hard_limit_at"]),
            human_hours(volume["hours_to_hard_limit"]),
            _when(volume["crosses_plugin_limit_at"]),
            _rate(volume["peak_fill_bytes_per_sec"]),
            human_bytes(volume["recommended_limit_bytes"]),
            _short_limits(volume),
        )
        for volume in next_volumes
    ]
    return Table(
        [
            "#",
            "cluster",
            "broker",
            "log dir",
            "free now",
            "size",
            "free at hard limit",
            "hard limit",
            "growth a day",
            "reaches hard limit",
            "in",
            "reaches plugin limit",
            "peak fill",
            "least limit",
            "limits short of it",
        ],
        rows,
        (0, 2, 4, 5, 6, 8, 12, 13),
    )


def _client_table(clients):
    headers = ["user", "client id", "peak produce", "peak fetch", "windows over quota", "max throttle (ms)"]
    if clients["with_recommendations"]:
        headers += ["recommended producer_byte_rate", "recommended consumer_byte_rate"]
    rows = []
    for client in clients["top"]:
        row = [
            or_placeholder(client["user"], "(no user)"),
            or_placeholder(client["client_id"], "(no client id)"),
            _number(client["peak_produce"]),
            _number(client["peak_fetch"]),
            _number(client["windows_over"]),
            _number(client["max_throttle_time_ms"]),
        ]
        if clients["with_recommendations"]:
            row += [
                _number(client.get("recommended_producer_byte_rate")),
                _number(client.get("recommended_consumer_byte_rate")),
            ]
        rows.append(row)
    return Table(headers, rows, tuple(range(2, len(headers))))


def _topic_table(topics):
    rows = [
        (
            topic["topic"],
            _number(topic["windows"]),
            _number(topic["brokers"]),
            human_bytes(topic["bytes_rejected"]),
            human_bytes(topic["peak_rate"]) + "/s",
            human_bytes(topic["threshold"]) + "/s",
        )
        for topic in topics
    ]
    return Table(
        ["topic", "windows over threshold", "brokers", "bytes rejected", "peak rate (EWMA)", "threshold"],
        rows,
        (1, 2, 3, 4, 5),
    )


def _guard_figures(figures):
    """What the comparison counted, as one sentence."""
    return (
        f"{_number(figures['decisions'])} guard decisions: {_number(figures['compared'])} compared with the replay at "
        f"their check instant, of which {_number(figures['agreeing'])} agree and {_number(figures['differences'])} "
        f"differ; {_number(figures['superseded'])} superseded by a later decision in the same instant; "
        f"{_number(figures['not_replayed'])} not replayed (a policy this run did not compute, or an instant the "
        "timeline does not reach)."
    )


def _guard_table(differences):
    rows = [
        (
            _instant(difference["decided_at"]),
            _instant(difference["at"]),
            difference["cluster"],
            difference["policy"],
            _number(difference["guard_throttle_factor"]),
            difference["guard_state"],
            or_placeholder(difference["guard_reason"], "-"),
            _number(difference["replay_throttle_factor"]),
            difference["replay_state"],
            ", ".join(difference["differs_in"] or []),
        )
        for difference in differences
    ]
    return Table(
        [
            "guard decided at",
            "check instant",
            "cluster",
            "policy",
            "guard factor",
            "guard state",
            "guard reason",
            "replay factor",
            "replay state",
            "differs in",
        ],
        rows,
        (4, 7),
    )


def _escaped(value):
    """Every value the template puts in, escaped as the page has always escaped it: with html.escape (quotes as &quot;
    and &#x27;; autoescaping alone would write &#34; and &#39;), None as nothing. Markup (a macro's output) is already
    escaped; anything else is escaped here, and autoescaping, left on, finds it marked as done."""
    if hasattr(value, "__html__"):
        return value
    return markupsafe.Markup(html.escape("" if value is None else str(value), quote=True))


_ENVIRONMENT = jinja2.Environment(
    loader=jinja2.FileSystemLoader(str(TEMPLATES)),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    finalize=_escaped,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)
_ENVIRONMENT.filters.update(
    bytes=human_bytes, hours=human_hours, when=_when, number=_number, client=client_label, per_day=_per_day
)
_ENVIRONMENT.tests.update(plugin_first=_plugin_limit_first)
