"""The HTML report: one static page with PNG charts, written to DIR/report/ beside the job's other outputs.

Everything is reduced in Spark first (each history downsampled to at most HISTORY_POINTS time buckets, a bounded
number of clusters, volumes and clients), so the driver only ever collects a few thousand rows, whatever the fleet.

DIR/report/ holds:
  index.html                          the page (no JavaScript, no external assets, every value HTML-escaped)
  free-space-<cluster>.png            free space per volume over time, hard limit and the forecast projection
  throttle-factor-<cluster>.png       the throttle factor timeline of each policy
  clients-nearest-quota.png           the clients nearest their quota (only with traffic)
"""

import datetime
import hashlib
import html
import os
import re

from pyspark.sql import Window
from pyspark.sql import functions as F
from pyspark.errors import AnalysisException

from headroom_pipeline.job import OUTPUTS_OF_STAGE

HISTORY_POINTS = 300          # time buckets per volume (or per cluster and policy) drawn
VOLUMES_PER_CHART = 8         # the volumes of a cluster that fill first; more lines would not be readable
NEXT_VOLUMES = 20             # rows of the "fill up next" table
TOP_CLIENTS = 15
TOP_TOPICS = 10
MIN_PROJECTION_SECONDS = 86400.0
REPORT_DIR = "report"
INDEX = "index.html"
CLIENTS_CHART = "clients-nearest-quota.png"
OUTPUT_LINKS = (
    ("summary.json", "counts, timings and settings of the run"),
    ("volumes", "normalized history, one row per volume and snapshot"),
    ("decisions", "throttle factor and state per cluster and check instant, per policy"),
    ("forecast", "growth trend per volume and when it crosses its limits"),
    ("clients", "client traffic per window against its quota"),
    ("client_recommendations", "recommended client quotas"),
    ("topics", "topic windows over their threshold"),
    ("topic_thresholds", "the topic threshold plan"),
    ("rejected", "every input record that could not be used, with the reason"),
)
POLICY_LABELS = {"strimzi": "strimzi (shipped quota plugin)", "graded": "graded (soft/hard limits)"}
POLICY_COLOURS = {"strimzi": "#d62728", "graded": "#1f77b4"}
# Both policies are often at the same factor: a wide, light line under a thin dashed one keeps both visible.
POLICY_STYLES = {"graded": {"linewidth": 3.2, "alpha": 0.55}, "strimzi": {"linewidth": 1.4, "linestyle": "--"}}
UTC = datetime.timezone.utc


def write_report(spark, out_dir, summary, max_clusters=12):
    """Write DIR/report/index.html and its charts from the Parquet outputs in ``out_dir``; return the page's path."""
    report_dir = os.path.join(out_dir, REPORT_DIR)
    os.makedirs(report_dir, exist_ok=True)
    _remove_previous(report_dir)
    names = ("volumes", "decisions", "forecast", "clients", "client_recommendations", "topics")
    outputs = {name: _read(spark, os.path.join(out_dir, name)) if _written(name, summary) else None for name in names}
    clusters, cluster_count = _chosen_clusters(outputs, max_clusters)
    volumes = _chart_volumes(outputs["forecast"], clusters)
    history = _volume_history(outputs["volumes"], outputs["forecast"] is not None, volumes, clusters)
    timelines = _throttle_timelines(outputs["decisions"], clusters)
    charts = []
    for cluster in clusters:
        slug = cluster_slug(cluster)
        charts.append({
            "cluster": cluster,
            "free_space": _draw_free_space(report_dir, f"free-space-{slug}.png", cluster, volumes.get(cluster, []), history),
            "throttle": _draw_throttle(report_dir, f"throttle-factor-{slug}.png", cluster, timelines.get(cluster, {})),
        })
    clients = _top_clients(outputs["clients"], outputs["client_recommendations"])
    clients_chart = _draw_clients(report_dir, CLIENTS_CHART, clients["top"]) if clients else None
    page = _page(
        summary=summary or {},
        next_volumes=_next_volumes(outputs["forecast"]),
        not_open=_clusters_not_open(outputs["decisions"]),
        clients=clients,
        clients_chart=clients_chart,
        topics=_top_topics(outputs["topics"]),
        charts=charts,
        cluster_count=cluster_count,
        links=[(name, text) for name, text in OUTPUT_LINKS if _written(name, summary) and os.path.exists(os.path.join(out_dir, name))],
    )
    path = os.path.join(report_dir, INDEX)
    temporary = path + ".tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(page)
    os.replace(temporary, path)
    return path


# -- reading and reducing in Spark ------------------------------------------------------------------------------
def _remove_previous(report_dir):
    """Charts of clusters no longer shown must not linger beside the new page."""
    for name in os.listdir(report_dir):
        if name.endswith(".png") or name == INDEX:
            os.remove(os.path.join(report_dir, name))


def _written(name, summary):
    """Whether this run wrote output ``name``, by the stages its summary lists (without a summary: whatever is there)."""
    stages = (summary or {}).get("stages")
    return stages is None or all(stage in stages for stage, names in OUTPUTS_OF_STAGE.items() if name in names)


def _read(spark, path):
    """The Parquet output at ``path``, or None when the job did not write it (optional outputs)."""
    if not os.path.isdir(path):
        return None
    try:
        return spark.read.parquet(path)
    except AnalysisException:       # a directory without Parquet files: nothing to read
        return None


def _epoch_seconds(column):
    """Timestamps travel to the driver as UTC epoch seconds: collected datetimes would be in the driver's local zone."""
    return (F.unix_micros(column) / 1_000_000.0)


def _utc(seconds):
    return None if seconds is None else datetime.datetime.fromtimestamp(seconds, tz=UTC)


def _chosen_clusters(outputs, max_clusters):
    """At most ``max_clusters`` cluster names, those whose volumes cross their hard limit first; and how many there are."""
    forecast, volumes = outputs["forecast"], outputs["volumes"]
    if forecast is not None:
        ranked = forecast.groupBy("cluster").agg(F.min("crosses_hard_limit_at").alias("first_crossing"), F.min("rank").alias("best_rank"))
        ordered = ranked.orderBy(F.col("first_crossing").asc_nulls_last(), F.col("best_rank").asc_nulls_last(), "cluster")
    elif volumes is not None:
        ranked = volumes.select("cluster").distinct()
        ordered = ranked.orderBy("cluster")
    else:
        return [], 0
    chosen = [row["cluster"] for row in ordered.select("cluster").limit(max_clusters).collect()]
    count = len(chosen) if len(chosen) < max_clusters else ranked.count()
    return chosen, count


def _chart_volumes(forecast, clusters):
    """Per cluster, the forecast rows of the volumes that fill first (at most VOLUMES_PER_CHART)."""
    if forecast is None or not clusters:
        return {}
    by_rank = Window.partitionBy("cluster").orderBy(F.col("rank").asc_nulls_last(), "broker_id", "log_dir")
    rows = (forecast.where(F.col("cluster").isin(clusters))
            .withColumn("place", F.row_number().over(by_rank)).where(F.col("place") <= VOLUMES_PER_CHART)
            .select("cluster", "broker_id", "log_dir", "place", "usable_bytes", "hard_limit_usable_bytes", "plugin_limit_usable_bytes",
                    "bytes_per_hour", _epoch_seconds(F.col("last_at")).alias("last_at"),
                    _epoch_seconds(F.col("crosses_hard_limit_at")).alias("crosses_hard_limit_at"))
            .collect())
    chosen = {}
    for row in sorted(rows, key=lambda row: (row["cluster"], row["place"])):
        chosen.setdefault(row["cluster"], []).append(row.asDict())
    return chosen


def _downsample(frame, keys, value, how):
    """At most HISTORY_POINTS rows per ``keys``: equal time buckets over each key's own span, ``how`` of ``value`` in each.

    Each bucket keeps its earliest instant, so a downsampled line keeps its time order and never invents a time.
    """
    span = Window.partitionBy(*keys)
    timed = (frame.withColumn("at_micros", F.unix_micros("at"))
             .withColumn("first_micros", F.min("at_micros").over(span))
             .withColumn("last_micros", F.max("at_micros").over(span)))
    # In doubles: the bucket arithmetic must not overflow (ANSI mode raises) and the +1 keeps the divisor positive.
    offset = (F.col("at_micros") - F.col("first_micros")).cast("double")
    width = (F.col("last_micros") - F.col("first_micros")).cast("double") + 1.0
    bucket = F.floor(offset * HISTORY_POINTS / width).alias("bucket")
    return (timed.groupBy(*keys, bucket)
            .agg(F.min("at_micros").alias("at_micros"), how(value).alias(value))
            .select(*keys, (F.col("at_micros") / 1_000_000.0).alias("at"), value))


def _volume_history(volumes_frame, have_forecast, volumes, clusters):
    """{(cluster, broker_id, log_dir): ([datetime], [usable bytes])}, the lowest free space of each time bucket."""
    if volumes_frame is None or not clusters:
        return {}
    frame = volumes_frame.where(F.col("cluster").isin(clusters))
    if have_forecast:
        keys = [(row["cluster"], row["broker_id"], row["log_dir"]) for rows in volumes.values() for row in rows]
        if not keys:
            return {}
        wanted = frame.sparkSession.createDataFrame(keys, "cluster string, broker_id long, log_dir string")
        frame = frame.join(F.broadcast(wanted), ["cluster", "broker_id", "log_dir"])
    else:
        by_name = Window.partitionBy("cluster").orderBy("broker_id", "log_dir")
        named = frame.select("cluster", "broker_id", "log_dir").distinct().withColumn("place", F.dense_rank().over(by_name))
        frame = frame.join(named.where(F.col("place") <= VOLUMES_PER_CHART).drop("place"), ["cluster", "broker_id", "log_dir"])
    reduced = _downsample(frame.select("cluster", "broker_id", "log_dir", "at", "usable_bytes"), ["cluster", "broker_id", "log_dir"],
                          "usable_bytes", F.min)
    history = {}
    for row in reduced.orderBy("cluster", "broker_id", "log_dir", "at").collect():
        times, values = history.setdefault((row["cluster"], row["broker_id"], row["log_dir"]), ([], []))
        times.append(_utc(row["at"]))
        values.append(row["usable_bytes"])
    return history


def _throttle_timelines(decisions, clusters):
    """{cluster: {policy: ([datetime], [factor])}}: the lowest factor of each time bucket, so no throttle is hidden."""
    if decisions is None or not clusters:
        return {}
    frame = decisions.where(F.col("cluster").isin(clusters)).select("cluster", "policy", "at", "throttle_factor")
    timelines = {}
    for row in _downsample(frame, ["cluster", "policy"], "throttle_factor", F.min).orderBy("cluster", "policy", "at").collect():
        times, values = timelines.setdefault(row["cluster"], {}).setdefault(row["policy"], ([], []))
        times.append(_utc(row["at"]))
        values.append(row["throttle_factor"])
    return timelines


def _next_volumes(forecast):
    """The NEXT_VOLUMES volumes that fill up first (forecast rank), as dicts with UTC datetimes."""
    if forecast is None:
        return None
    rows = (forecast.orderBy(F.col("rank").asc_nulls_last(), "cluster", "broker_id", "log_dir").limit(NEXT_VOLUMES)
            .select("rank", "cluster", "broker_id", "log_dir", "total_bytes", "usable_bytes", "hard_limit_type", "hard_limit_level",
                    "hard_limit_usable_bytes", "plugin_limit_usable_bytes", "bytes_per_hour", "hours_to_hard_limit",
                    _epoch_seconds(F.col("crosses_hard_limit_at")).alias("crosses_hard_limit_at"),
                    _epoch_seconds(F.col("crosses_plugin_limit_at")).alias("crosses_plugin_limit_at"),
                    _epoch_seconds(F.col("last_at")).alias("last_at"))
            .collect())
    volumes = []
    for row in rows:
        volume = row.asDict()
        for name in ("crosses_hard_limit_at", "crosses_plugin_limit_at", "last_at"):
            volume[name] = _utc(volume[name])
        volumes.append(volume)
    return volumes


def _clusters_not_open(decisions, limit=50):
    """Clusters whose latest decision (per policy) is PAUSE or THROTTLE: (rows, how many), PAUSE first."""
    if decisions is None:
        return None
    latest = Window.partitionBy("cluster", "policy").orderBy(F.col("at").desc())
    current = (decisions.withColumn("recency", F.row_number().over(latest)).where((F.col("recency") == 1) & (F.col("state") != "OPEN"))
               .select("cluster", "policy", "state", "throttle_factor", _epoch_seconds(F.col("at")).alias("at")))
    rows = current.orderBy(F.when(F.col("state") == "PAUSE", 0).otherwise(1), "cluster", "policy").limit(limit).collect()
    count = len(rows) if len(rows) < limit else current.count()
    return {"rows": [dict(row.asDict(), at=_utc(row["at"])) for row in rows], "count": count}


def _top_clients(clients, recommendations):
    """The TOP_CLIENTS clients with the highest peak fraction of a quota used (produce or fetch); None without traffic."""
    if clients is None:
        return None
    peaks = clients.groupBy("user", "client_id").agg(
        F.max("quota_used_fraction").alias("peak_produce"),
        F.max("fetch_quota_used_fraction").alias("peak_fetch"),
        F.max("throttle_time_ms").alias("max_throttle_time_ms"),
        F.count(F.when((F.col("quota_used_fraction") > 1.0) | (F.col("fetch_quota_used_fraction") > 1.0), 1)).alias("windows_over"),
    ).withColumn("peak", F.greatest("peak_produce", "peak_fetch"))   # greatest skips nulls: a client with one quota counts
    if recommendations is not None:
        advice = recommendations.select("user", "client_id", "recommended_producer_byte_rate", "recommended_consumer_byte_rate")
        peaks = peaks.join(advice, peaks["user"].eqNullSafe(advice["user"]) & peaks["client_id"].eqNullSafe(advice["client_id"]), "left")
        peaks = peaks.drop(advice["user"]).drop(advice["client_id"])
    measured = peaks.where(F.col("peak").isNotNull())
    top = [row.asDict() for row in measured.orderBy(F.col("peak").desc(), "user", "client_id").limit(TOP_CLIENTS).collect()]
    totals = peaks.agg(F.count(F.lit(1)).alias("clients"), F.count(F.when(F.col("peak") > 1.0, 1)).alias("over"),
                       F.count(F.when(F.col("peak").isNull(), 1)).alias("without_quota")).first()
    return {"top": top, "clients": totals["clients"], "over": totals["over"], "without_quota": totals["without_quota"],
            "with_recommendations": recommendations is not None}


def _top_topics(topics):
    """Topics most often over their threshold; None when no topic analysis ran."""
    if topics is None:
        return None
    rows = (topics.groupBy("topic").agg(F.count(F.lit(1)).alias("windows"), F.countDistinct("broker_id").alias("brokers"),
                                        F.sum("bytes_rejected").alias("bytes_rejected"), F.max("topic_ewma").alias("peak_rate"),
                                        F.max("topic_threshold").alias("threshold"))
            .orderBy(F.col("windows").desc(), F.col("bytes_rejected").desc_nulls_last(), "topic").limit(TOP_TOPICS).collect())
    return [row.asDict() for row in rows]


# -- charts -------------------------------------------------------------------------------------------------------
def cluster_slug(cluster):
    """A file-name-safe, deterministic slug; names that are not already one get a short hash so two never collide."""
    text = str(cluster)
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "cluster"
    if slug != text:
        slug = f"{slug[:60]}-{hashlib.sha256(text.encode('utf-8')).hexdigest()[:8]}"
    return slug


def _plain(text):
    """Text for matplotlib as typed: a $ would otherwise start mathtext."""
    return str(text).replace("$", r"\$")


def human_bytes(value):
    if value is None:
        return "-"
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(size) < 1024.0 or unit == "PiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024.0
    return f"{size:.1f} PiB"


def human_hours(hours):
    if hours is None:
        return "never"
    if hours < 0:
        return "already past"
    if hours < 1:
        return f"{hours * 60:.0f} minutes"
    if hours < 48:
        return f"{hours:.1f} hours"
    return f"{hours / 24:.1f} days"


def _figure(width=10.0, height=4.5):
    from matplotlib.figure import Figure       # no pyplot: no global state, no display, Agg when saved as PNG

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
    while top / unit >= 1024.0 and unit < 1024.0 ** 5:
        unit *= 1024.0
    for step in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000):
        if top / (unit * step) <= 7:
            return unit * step
    return unit * 1024.0


def _counted(count, noun):
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _projection(volume, history_span):
    """The dashed forecast: from the last observation to the hard-limit crossing, or to the horizon when later or never."""
    last_at, usable, per_hour = volume["last_at"], volume["usable_bytes"], volume["bytes_per_hour"]
    if last_at is None or usable is None or per_hour is None or per_hour <= 0:
        return None
    horizon = last_at + max(history_span, MIN_PROJECTION_SECONDS)
    crossing = volume["crosses_hard_limit_at"]
    if crossing is not None and crossing <= horizon and volume["hard_limit_usable_bytes"] is not None:
        return [_utc(last_at), _utc(max(crossing, last_at))], [usable, volume["hard_limit_usable_bytes"]], True
    return [_utc(last_at), _utc(horizon)], [usable, max(usable - per_hour * (horizon - last_at) / 3600.0, 0.0)], False


def _draw_free_space(report_dir, name, cluster, volumes, history):
    from matplotlib.ticker import FuncFormatter, MultipleLocator

    figure, axes = _figure()
    colours = [f"C{index % 10}" for index in range(max(len(volumes), 1))]
    keys = [(cluster, volume["broker_id"], volume["log_dir"]) for volume in volumes]
    if not volumes:      # no forecast: the history of the volumes written, by broker and log dir
        keys = sorted(key for key in history if key[0] == cluster)[:VOLUMES_PER_CHART]
        colours = [f"C{index % 10}" for index in range(max(len(keys), 1))]
    times = [moment for key in keys for moment in history.get(key, ([], []))[0]]
    history_span = (max(times) - min(times)).total_seconds() if times else 0.0
    hard_levels = {volume["hard_limit_usable_bytes"] for volume in volumes if volume["hard_limit_usable_bytes"] is not None}
    plugin_levels = {volume["plugin_limit_usable_bytes"] for volume in volumes if volume["plugin_limit_usable_bytes"] is not None}
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
        axes.axhline(level, color="black", linestyle="-.", linewidth=1.2, label=f"hard limit ({human_bytes(level)} free)")
    elif hard_levels:
        axes.plot([], [], color="grey", linestyle=":", label="hard limit (per volume, dotted)")
    if len(plugin_levels) == 1:
        level = next(iter(plugin_levels))
        axes.axhline(level, color="#ff7f0e", linestyle=(0, (1, 3)), linewidth=1.2, label=f"plugin limit ({human_bytes(level)} free)")
    if not keys:
        axes.text(0.5, 0.5, "no volume history", transform=axes.transAxes, ha="center", va="center")
    axes.set_ylim(bottom=0)
    axes.yaxis.set_major_locator(MultipleLocator(_byte_tick_step(axes.get_ylim()[1])))
    axes.yaxis.set_major_formatter(FuncFormatter(lambda value, position: human_bytes(value)))
    axes.set_ylabel("free space (usable bytes)")
    axes.set_title(_plain(f"Free space, cluster {cluster}: {_counted(len(keys), 'volume')} that fill first (dashed: forecast, x: hard limit reached)"),
                   fontsize="medium")
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
        axes.step(moments, factors, where="post", color=POLICY_COLOURS.get(policy, "grey"),
                  label=_plain(POLICY_LABELS.get(policy, policy)), **POLICY_STYLES.get(policy, {"linewidth": 1.4}))
    if policies:
        _time_axis(axes)
        axes.legend(loc="lower left", fontsize="small", frameon=False)
    else:
        axes.text(0.5, 0.5, "no decisions", transform=axes.transAxes, ha="center", va="center")
    axes.set_ylim(-0.05, 1.05)
    axes.set_ylabel("throttle factor")
    axes.set_title(_plain(f"Throttle factor, cluster {cluster} (1.0 open, 0.0 paused; lowest per time bucket)"), fontsize="medium")
    axes.grid(True, alpha=0.3)
    return _save(figure, report_dir, name)


def _or_none(value, placeholder):
    return placeholder if value in (None, "") else value


def client_label(client):
    text = f'{_or_none(client["user"], "(no user)")} / {_or_none(client["client_id"], "(no client id)")}'
    return text if len(text) <= 48 else text[:47] + "\u2026"


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
    axes.set_title(_plain(f"The {_counted(len(clients), 'client')} nearest their quota (user / client id)"), fontsize="medium")
    axes.grid(True, axis="x", alpha=0.3)
    if not clients:
        axes.text(0.5, 0.5, "no client has a quota", transform=axes.transAxes, ha="center", va="center")
    axes.legend(loc="lower right", fontsize="small")
    return _save(figure, report_dir, name)


# -- the page -----------------------------------------------------------------------------------------------------
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 72em; color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 2em; }
.headline { background: #fff8e1; border-left: 6px solid #f0a000; padding: .5em 1.2em; }
.headline li { margin: .4em 0; }
table { border-collapse: collapse; margin: .6em 0; font-size: .9em; }
th, td { border: 1px solid #ddd; padding: .25em .6em; text-align: left; vertical-align: top; }
td.number { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f3f3f3; }
.PAUSE { color: #b00020; font-weight: bold; } .THROTTLE { color: #a05a00; font-weight: bold; }
figure { margin: 1.2em 0; } img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption, .note { color: #555; font-size: .9em; }
"""


def esc(value):
    return html.escape("" if value is None else str(value), quote=True)


def _when(moment):
    return "never" if moment is None else moment.strftime("%Y-%m-%d %H:%M UTC")


def _number(value):
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.3f}".rstrip("0").rstrip(".")
    return f"{value:,}" if isinstance(value, int) else str(value)


def _table(headers, rows, numeric=()):
    """An HTML table; every cell escaped here, so callers pass raw values."""
    head = "".join(f"<th>{esc(header)}</th>" for header in headers)
    body = []
    for row in rows:
        cells = []
        for index, cell in enumerate(row):
            css = ' class="number"' if index in numeric else ""
            cells.append(f"<td{css}>{esc(cell)}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _headline(next_volumes, not_open, clients):
    """What to look at first, as escaped list items."""
    items = []
    crossing = [volume for volume in next_volumes or [] if volume["crosses_hard_limit_at"] is not None]
    if next_volumes is None:
        items.append("No volume forecast was written.")
    elif crossing:
        first = crossing[0]
        items.append(f"Fills up next: volume <strong>{esc(first['log_dir'])}</strong> on broker {esc(first['broker_id'])} of cluster "
                     f"<strong>{esc(first['cluster'])}</strong> reaches its hard limit ({esc(human_bytes(first['hard_limit_usable_bytes']))} "
                     f"free) at <strong>{esc(_when(first['crosses_hard_limit_at']))}</strong>, "
                     f"{esc(human_hours(first['hours_to_hard_limit']))} after its last snapshot "
                     f"({esc(human_bytes(first['usable_bytes']))} free now, growing {esc(human_bytes(_per_day(first)))} a day)."
                     + _plugin_note(first))
        if len(crossing) > 1:
            items.append(f"{esc(len(crossing))} of the {esc(len(next_volumes))} volumes listed below are on course to reach their hard limit.")
    else:
        items.append("No volume is on course to reach its hard limit.")
    if not_open is None:
        items.append("No decision timeline was written.")
    elif not_open["rows"]:
        states = ", ".join(f'<strong>{esc(row["cluster"])}</strong> <span class="{esc(row["state"])}">{esc(row["state"])}</span> '
                           f'({esc(row["policy"])}, factor {esc(_number(row["throttle_factor"]))} at {esc(_when(row["at"]))})'
                           for row in not_open["rows"])
        more = f" and {esc(not_open['count'] - len(not_open['rows']))} more" if not_open["count"] > len(not_open["rows"]) else ""
        items.append(f"Clusters not open at their latest decision: {states}{more}.")
    else:
        items.append("Every cluster is OPEN at its latest decision.")
    if clients is None:
        items.append("Clients: no traffic given.")
    elif clients["over"]:
        names = ", ".join(f"<strong>{esc(client_label(client))}</strong> ({esc(_number(client['peak']))})"
                          for client in clients["top"] if client["peak"] is not None and client["peak"] > 1.0)
        items.append(f"{esc(clients['over'])} of {esc(clients['clients'])} clients went over their quota: {names}.")
    else:
        items.append(f"No client went over its quota ({esc(clients['clients'])} clients seen).")
    return "".join(f"<li>{item}</li>" for item in items)


def _limit_text(limit_type, level):
    """A limit as its type reads: bytes for min_free_bytes and consumed_space, percent for min_free_percentage."""
    if limit_type is None or level is None:
        return "-"
    if limit_type == "min_free_percentage":
        return f"{limit_type} {_number(float(level))}%"
    return f"{limit_type} {human_bytes(level)}"


def _plugin_note(volume):
    """When the shipped plugin's own limit comes first, that is when produce stops: say so."""
    crossing = volume["crosses_plugin_limit_at"]
    if crossing is None or (volume["crosses_hard_limit_at"] is not None and crossing >= volume["crosses_hard_limit_at"]):
        return ""
    return (f" The quota plugin's limit ({esc(human_bytes(volume['plugin_limit_usable_bytes']))} free) pauses produce on the cluster "
            f"earlier, at <strong>{esc(_when(crossing))}</strong>.")


def _per_day(volume):
    return None if volume["bytes_per_hour"] is None else volume["bytes_per_hour"] * 24.0


def _counts(summary):
    parts = []
    inputs = summary.get("inputs") or {}
    rows = [(name, figures.get("read"), figures.get("used"), figures.get("rejected")) for name, figures in sorted(inputs.items())]
    rows.append(("total", summary.get("rows_read"), summary.get("rows_used"), summary.get("rows_rejected")))
    parts.append(_table(["input", "records read", "used", "rejected"], [(row[0], *map(_number, row[1:])) for row in rows], numeric=(1, 2, 3)))
    stages = summary.get("stages") or {}
    stage_rows = [(stage, key, _number(value)) for stage, figures in sorted(stages.items()) if isinstance(figures, dict)
                  for key, value in sorted(figures.items())]
    if stage_rows:
        parts.append(_table(["stage", "count", "value"], stage_rows, numeric=(2,)))
    timings = summary.get("timings_seconds") or {}
    if timings:
        parts.append(_table(["step", "seconds"], [(step, _number(seconds)) for step, seconds in timings.items()], numeric=(1,)))
    return "".join(parts)


def _volumes_table(next_volumes):
    if next_volumes is None:
        return '<p class="note">No forecast was written.</p>'
    if not next_volumes:
        return '<p class="note">No volume in the forecast.</p>'
    rows = [(volume["rank"], volume["cluster"], volume["broker_id"], volume["log_dir"], human_bytes(volume["usable_bytes"]),
             human_bytes(volume["total_bytes"]), human_bytes(volume["hard_limit_usable_bytes"]),
             _limit_text(volume["hard_limit_type"], volume["hard_limit_level"]), human_bytes(_per_day(volume)),
             _when(volume["crosses_hard_limit_at"]), human_hours(volume["hours_to_hard_limit"]), _when(volume["crosses_plugin_limit_at"]))
            for volume in next_volumes]
    return _table(["#", "cluster", "broker", "log dir", "free now", "size", "free at hard limit", "hard limit", "growth a day",
                   "reaches hard limit", "in", "reaches plugin limit"], rows, numeric=(0, 2, 4, 5, 6, 8))


def _figure_html(name, alt, caption):
    return (f'<figure><img src="{esc(name)}" alt="{esc(alt)}" loading="lazy">'
            f"<figcaption>{esc(caption)}</figcaption></figure>")


def _charts_html(charts, cluster_count):
    if not charts:
        return '<p class="note">No cluster to draw.</p>'
    parts = [f'<p class="note">{esc(len(charts))} of {esc(cluster_count)} clusters, those whose volumes reach their hard limit first.</p>']
    for chart in charts:
        cluster = chart["cluster"]
        parts.append(f"<h3>Cluster {esc(cluster)}</h3>")
        parts.append(_figure_html(chart["free_space"], f"Free space over time of the volumes of cluster {cluster} that fill first, "
                                  "with the hard limit and the forecast",
                                  "Free (usable) bytes per volume, lowest per time bucket; dashed: the forecast up to the hard limit."))
        parts.append(_figure_html(chart["throttle"], f"Throttle factor over time of cluster {cluster}, per policy",
                                  "Throttle factor per policy (1.0 open, below 1.0 throttled, 0.0 paused)."))
    return "".join(parts)


def _clients_html(clients, chart):
    if clients is None:
        return '<p class="note">No traffic given: no client analysis.</p>'
    parts = [f'<p class="note">{esc(clients["clients"])} clients seen, {esc(clients["without_quota"])} without any quota, '
             f'{esc(clients["over"])} over a quota in at least one window.</p>']
    if chart:
        parts.append(_figure_html(chart, "Peak fraction of the produce and fetch quota used by the clients nearest their quota",
                                  "Peak fraction of the quota used in any window; beyond the dashed line at 1.0 the broker throttles."))
    if clients["top"]:
        headers = ["user", "client id", "peak produce", "peak fetch", "windows over quota", "max throttle (ms)"]
        if clients["with_recommendations"]:
            headers += ["recommended producer_byte_rate", "recommended consumer_byte_rate"]
        rows = []
        for client in clients["top"]:
            row = [_or_none(client["user"], "(no user)"), _or_none(client["client_id"], "(no client id)"), _number(client["peak_produce"]),
                   _number(client["peak_fetch"]), _number(client["windows_over"]), _number(client["max_throttle_time_ms"])]
            if clients["with_recommendations"]:
                row += [_number(client.get("recommended_producer_byte_rate")), _number(client.get("recommended_consumer_byte_rate"))]
            rows.append(row)
        parts.append(_table(headers, rows, numeric=tuple(range(2, len(headers)))))
    return "".join(parts)


def _topics_html(topics):
    if topics is None:
        return '<p class="note">No topic thresholds given: no topic analysis.</p>'
    if not topics:
        return '<p class="note">No topic went over its threshold.</p>'
    rows = [(topic["topic"], _number(topic["windows"]), _number(topic["brokers"]), human_bytes(topic["bytes_rejected"]),
             human_bytes(topic["peak_rate"]) + "/s", human_bytes(topic["threshold"]) + "/s") for topic in topics]
    return _table(["topic", "windows over threshold", "brokers", "bytes rejected", "peak rate (EWMA)", "threshold"], rows,
                  numeric=(1, 2, 3, 4, 5))


def _links_html(links):
    if not links:
        return '<p class="note">No output found.</p>'
    items = "".join(f'<li><a href="../{esc(name)}{"" if name.endswith(".json") else "/"}">{esc(name)}</a>: {esc(text)}</li>'
                    for name, text in links)
    return f"<ul>{items}</ul>"


def _page(summary, next_volumes, not_open, clients, clients_chart, topics, charts, cluster_count, links):
    sections = [
        ("Look here first", f'<ul class="headline">{_headline(next_volumes, not_open, clients)}</ul>'),
        ("Counts", _counts(summary)),
        (f"The {NEXT_VOLUMES} volumes that fill up next", _volumes_table(next_volumes)),
        ("Free space and throttle factor per cluster", _charts_html(charts, cluster_count)),
        ("Clients nearest their quota", _clients_html(clients, clients_chart)),
        ("Topics over their threshold", _topics_html(topics)),
        ("Outputs", _links_html(links)),
    ]
    body = "".join(f"<h2>{esc(title)}</h2>{content}" for title, content in sections)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>Kafka volume headroom report</title><style>{STYLE}</style></head>"
            f"<body><h1>Kafka volume headroom report</h1>{body}</body></html>\n")
