"""The report's charts: PNG files drawn with matplotlib from the data report_data collected.

No pyplot (no global state, no display); matplotlib is imported only when a chart is drawn, so that a run without
the report never loads it. Every text is drawn as typed (a $ would otherwise start mathtext).

  free-space-<cluster>.png            free space per volume over time, hard limit and the forecast projection
  throttle-factor-<cluster>.png       the throttle factor timeline of each policy
  clients-nearest-quota.png           the clients nearest their quota (only with traffic)
"""

import datetime
import hashlib
import os
import re
from typing import Any, Protocol

from headroom_pipeline.report_format import UTC, client_label, human_bytes, utc

VOLUMES_PER_CHART = 8  # the volumes of a cluster that fill first; more lines would not be readable
MIN_PROJECTION_SECONDS = 86400.0
CLIENTS_CHART = "clients-nearest-quota.png"
POLICY_LABELS = {"strimzi": "strimzi (shipped quota plugin)", "graded": "graded (soft/hard limits)"}
POLICY_COLOURS = {"strimzi": "#d62728", "graded": "#1f77b4"}
# Both policies are often at the same factor: a wide, light line under a thin dashed one keeps both visible.
POLICY_STYLES = {"graded": {"linewidth": 3.2, "alpha": 0.55}, "strimzi": {"linewidth": 1.4, "linestyle": "--"}}


class ChartData(Protocol):
    """What draw reads of report_data.ReportData, which imports this module: this one cannot import it back."""

    clusters: list[str]
    chart_volumes: dict[str, list[dict[str, Any]]]
    history: dict[tuple[str, int, str], tuple[list[datetime.datetime], list[int]]]
    timelines: dict[str, dict[str, tuple[list[datetime.datetime], list[float]]]]
    clients: dict[str, Any] | None


def draw(report_dir: str, data: ChartData) -> tuple[list[dict[str, Any]], str | None]:
    """Every chart of ``data`` (report_data.ReportData) into ``report_dir``: ([{cluster, free_space, throttle}] with
    the file names of each cluster's charts, the clients chart's file name or None)."""
    charts = []
    for cluster in data.clusters:
        slug = cluster_slug(cluster)
        charts.append(
            {
                "cluster": cluster,
                "free_space": _draw_free_space(
                    report_dir, f"free-space-{slug}.png", cluster, data.chart_volumes.get(cluster, []), data.history
                ),
                "throttle": _draw_throttle(
                    report_dir, f"throttle-factor-{slug}.png", cluster, data.timelines.get(cluster, {})
                ),
            }
        )
    clients_chart = _draw_clients(report_dir, CLIENTS_CHART, data.clients["top"]) if data.clients else None
    return charts, clients_chart


def cluster_slug(cluster: str) -> str:
    """A file-name-safe, deterministic slug; names that are not already one get a short hash so two never collide."""
    text = str(cluster)
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "cluster"
    if slug != text:
        slug = f"{slug[:60]}-{hashlib.sha256(text.encode('utf-8')).hexdigest()[:8]}"
    return slug


def _plain(text):
    """Text for matplotlib as typed: a $ would otherwise start mathtext."""
    return str(text).replace("$", r"\$")


def _figure(width=10.0, height=4.5):
    from matplotlib.figure import Figure  # no pyplot: no global state, no display, Agg when saved as PNG

    figure = Figure(figsize=(width, height), dpi=100)
    return figure, figure.add_subplot(1, 1, 1)


def _time_axis(axes):
    from matplotlib import dates

    locator = dates.AutoDateLocator(tz=UTC)
    axes.xaxis.set_major_locator(locator)
    axes.xaxis.set_major_formatter(dates.ConciseDateFormatter(locator, tz=UTC))
    axes.set_xlabel("time (UTC)")


def _save(figure, report_dir, name):
    figure.savefig(os.path.join(report_dir, name), format="png", bbox_inches="tight", metadata={"Software": None})
    return name


def _byte_tick_step(top):
    """A tick step of 1, 2 or 5 times a power of 1024 bytes (10 GiB, not 9.3 GiB), about six ticks up to ``top``."""
    unit = 1.0
    while top / unit >= 1024.0 and unit < 1024.0**5:
        unit *= 1024.0
    for step in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000):
        if top / (unit * step) <= 7:
            return unit * step
    return unit * 1024.0


def _counted(count, noun):
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _projection(volume, history_span):
    """The dashed forecast: from the last observation to the hard-limit crossing, or to the horizon
    when later or never."""
    last_at, usable, per_hour = volume["last_at"], volume["usable_bytes"], volume["bytes_per_hour"]
    if last_at is None or usable is None or per_hour is None or per_hour <= 0:
        return None
    horizon = last_at + max(history_span, MIN_PROJECTION_SECONDS)
    crossing = volume["crosses_hard_limit_at"]
    if crossing is not None and crossing <= horizon and volume["hard_limit_usable_bytes"] is not None:
        return [utc(last_at), utc(max(crossing, last_at))], [usable, volume["hard_limit_usable_bytes"]], True
    return [utc(last_at), utc(horizon)], [usable, max(usable - per_hour * (horizon - last_at) / 3600.0, 0.0)], False


def _draw_free_space(report_dir, name, cluster, volumes, history):
    from matplotlib.ticker import FuncFormatter, MultipleLocator

    figure, axes = _figure()
    colours = [f"C{index % 10}" for index in range(max(len(volumes), 1))]
    keys = [(cluster, volume["broker_id"], volume["log_dir"]) for volume in volumes]
    if not volumes:  # no forecast: the history of the volumes written, by broker and log dir
        keys = sorted(key for key in history if key[0] == cluster)[:VOLUMES_PER_CHART]
        colours = [f"C{index % 10}" for index in range(max(len(keys), 1))]
    times = [moment for key in keys for moment in history.get(key, ([], []))[0]]
    history_span = (max(times) - min(times)).total_seconds() if times else 0.0
    hard_levels = {
        volume["hard_limit_usable_bytes"] for volume in volumes if volume["hard_limit_usable_bytes"] is not None
    }
    plugin_levels = {
        volume["plugin_limit_usable_bytes"] for volume in volumes if volume["plugin_limit_usable_bytes"] is not None
    }
    for index, key in enumerate(keys):
        colour = colours[index]
        label = _plain(f"broker {key[1]} {key[2]}")
        moments, values = history.get(key, ([], []))
        if moments:
            axes.plot(moments, values, color=colour, linewidth=1.4, label=label)
            label = None
        volume = volumes[index] if volumes else None
        if volume is None:
            continue
        projection = _projection(volume, history_span)
        if projection:
            line_times, line_values, crosses = projection
            axes.plot(line_times, line_values, color=colour, linestyle="--", linewidth=1.2, label=label)
            if crosses:
                axes.plot(line_times[-1:], line_values[-1:], color=colour, marker="x", markersize=8, linestyle="none")
        if len(hard_levels) > 1 and volume["hard_limit_usable_bytes"] is not None:
            axes.axhline(volume["hard_limit_usable_bytes"], color=colour, linestyle=":", linewidth=1.0)
    if len(hard_levels) == 1:
        level = next(iter(hard_levels))
        axes.axhline(
            level, color="black", linestyle="-.", linewidth=1.2, label=f"hard limit ({human_bytes(level)} free)"
        )
    elif hard_levels:
        axes.plot([], [], color="grey", linestyle=":", label="hard limit (per volume, dotted)")
    if len(plugin_levels) == 1:
        level = next(iter(plugin_levels))
        axes.axhline(
            level,
            color="#ff7f0e",
            linestyle=(0, (1, 3)),
            linewidth=1.2,
            label=f"plugin limit ({human_bytes(level)} free)",
        )
    if not keys:
        axes.text(0.5, 0.5, "no volume history", transform=axes.transAxes, ha="center", va="center")
    axes.set_ylim(bottom=0)
    axes.yaxis.set_major_locator(MultipleLocator(_byte_tick_step(axes.get_ylim()[1])))
    axes.yaxis.set_major_formatter(FuncFormatter(lambda value, position: human_bytes(value)))
    axes.set_ylabel("free space (usable bytes)")
    axes.set_title(
        _plain(
            f"Free space, cluster {cluster}: {_counted(len(keys), 'volume')} that fill first "
            "(dashed: forecast, x: hard limit reached)"
        ),
        fontsize="medium",
    )
    axes.grid(True, alpha=0.3)
    if times or volumes:
        _time_axis(axes)
    if axes.get_legend_handles_labels()[0]:
        axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    return _save(figure, report_dir, name)


def _draw_throttle(report_dir, name, cluster, policies):
    figure, axes = _figure(10.0, 3.2)
    for policy in sorted(policies):
        moments, factors = policies[policy]
        axes.step(
            moments,
            factors,
            where="post",
            color=POLICY_COLOURS.get(policy, "grey"),
            label=_plain(POLICY_LABELS.get(policy, policy)),
            **POLICY_STYLES.get(policy, {"linewidth": 1.4}),
        )
    if policies:
        _time_axis(axes)
        axes.legend(loc="lower left", fontsize="small", frameon=False)
    else:
        axes.text(0.5, 0.5, "no decisions", transform=axes.transAxes, ha="center", va="center")
    axes.set_ylim(-0.05, 1.05)
    axes.set_ylabel("throttle factor")
    axes.set_title(
        _plain(f"Throttle factor, cluster {cluster} (1.0 open, 0.0 paused; lowest per time bucket)"), fontsize="medium"
    )
    axes.grid(True, alpha=0.3)
    return _save(figure, report_dir, name)


def _draw_clients(report_dir, name, clients):
    figure, axes = _figure(10.0, max(2.5, 0.45 * len(clients) + 1.2))
    positions = list(range(len(clients)))
    produce = [client["peak_produce"] or 0.0 for client in clients]
    fetch = [client["peak_fetch"] or 0.0 for client in clients]
    axes.barh([position - 0.2 for position in positions], produce, height=0.4, color="#1f77b4", label="produce")
    axes.barh([position + 0.2 for position in positions], fetch, height=0.4, color="#2ca02c", label="fetch")
    axes.axvline(1.0, color="#d62728", linestyle="--", linewidth=1.4, label="quota (1.0)")
    axes.set_yticks(positions)
    axes.set_yticklabels([_plain(client_label(client)) for client in clients], fontsize="small")
    axes.invert_yaxis()
    axes.set_xlim(0, max([1.1] + [value * 1.05 for value in produce + fetch]))
    axes.set_xlabel("peak fraction of the quota used in a window")
    axes.set_title(
        _plain(f"The {_counted(len(clients), 'client')} nearest their quota (user / client id)"), fontsize="medium"
    )
    axes.grid(True, axis="x", alpha=0.3)
    if not clients:
        axes.text(0.5, 0.5, "no client has a quota", transform=axes.transAxes, ha="center", va="center")
    axes.legend(loc="lower right", fontsize="small")
    return _save(figure, report_dir, name)
