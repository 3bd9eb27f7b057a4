"""The headroom.kafka Grafana dashboard, built with the Grafana foundation SDK and written as JSON for Grafana's file
provisioning (``dashboards/headroom-kafka.json``).

    python -m dashboards.generate           write the file, and the dashboard-linter's configuration beside it
    python -m dashboards.generate --check   exit 1 when a file differs from what this module generates

Per broker and log dir, the free space against the soft and hard limits and the time left to them; the throttle factor
and state of the guard and of the Strimzi quota plugin; the producers' throttle time and byte rate per user and client
id (Kafka's quota sensors); the guard's decisions and quota changes. The queries follow the dashboard-linter's rules
(tests/unit/test_dashboard.py enforces them): every scraped series is selected by the cluster, job and instance
variables, ranges are ``$__rate_interval``, and counters appear only under ``rate`` or ``increase``.
"""

import argparse
import itertools
import json
import os
import sys
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

import yaml
from grafana_foundation_sdk.builders import common as common_builders
from grafana_foundation_sdk.builders import dashboard as dashboard_builders
from grafana_foundation_sdk.builders import prometheus, statetimeline, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common, dashboard

from dashboards.queries import DASHBOARD_FILE, query_panels

UID = "headroom-kafka"
# The dashboard-linter reads its configuration from this file in the dashboard's directory.
LINTER_CONFIGURATION = ".lint"
LINTER_EXCLUDED_RULES = ("target-job-rule", "target-instance-rule")
TITLE = "Headroom: Kafka disk space and produce quotas"
DATASOURCE = dashboard.DataSourceRef(type_val="prometheus", uid="${datasource}")

# Recording rules of the rule file rendered by plugins/module_utils/alert_rules.py, one series per cluster, broker_id
# and log_dir: a log dir is seen by the guard and by the plugin of every broker, so they carry no job or instance.
# The free space as the throttle sees it (the guard's figures, or the least free of every plugin's):
FREE_BYTES = "cluster_broker_log_dir:headroom_volume_available_bytes:min"
# The free space at which each limit trips, whatever the limit's type (bytes or share free, bytes used): expected from
# the same rule file, which does not record them yet (the policy strimzi has one limit: the hard one, where it pauses).
SOFT_LIMIT_FREE_BYTES = "cluster_broker_log_dir:headroom_volume_soft_limit_free_bytes:"
HARD_LIMIT_FREE_BYTES = "cluster_broker_log_dir:headroom_volume_hard_limit_free_bytes:"
RECORDED_SERIES = (FREE_BYTES, SOFT_LIMIT_FREE_BYTES, HARD_LIMIT_FREE_BYTES)
VOLUME_LABELS = "cluster, broker_id, log_dir"
# How far back the fill rate of a log dir is measured for the time left to a limit: the alert rules' default
# fill_lookback (the node-exporter mixin's), so that the panel and a KafkaLogDirFillingUp alert tell the same time.
FILL_RATE_WINDOW = "6h"

# Series that every scrape target of interest has (the guard, a Kafka node's JMX exporter with the plugin's MBeans or
# without), so that the job and instance variables list those targets and no others; the clusters are also those the
# rule files name.
SCRAPED_SERIES = (
    "headroom_guard_decisions_total",
    "strimzi_quotas_throttle_factor",
    "kafka_server_kafkaserver_brokerstate",
)
TARGET_SERIES = '__name__=~"{0}"'.format("|".join(SCRAPED_SERIES))
CLUSTER_SERIES = '__name__=~"{0}"'.format("|".join(SCRAPED_SERIES + (FREE_BYTES,)))
SCRAPE_MATCHERS = ('cluster=~"$cluster"', 'job=~"$job"', 'instance=~"$instance"')

# The state panel's codes: the guard's states, and the plugin's factor read the same way (1 open, 0 paused).
STATE_CODES = (("OPEN", "green"), ("THROTTLE", "orange"), ("PAUSE", "red"))

PanelBuilder = Union[timeseries.Panel, statetimeline.Panel]
PANEL_HEIGHT = 8
HALF_WIDTH = 12
FULL_WIDTH = 24


def scraped(metric: str, *matchers: str) -> str:
    """A series as Prometheus scraped it from the guard or a Kafka node, selected by every variable."""
    return "{0}{{{1}}}".format(metric, ", ".join(matchers + SCRAPE_MATCHERS))


def recorded(metric: str) -> str:
    """A recording rule's series: per log dir of a cluster, whoever observed it (no job or instance)."""
    return '{0}{{cluster=~"$cluster"}}'.format(metric)


def per_minute(counter: str, by: str) -> str:
    """A counter's increase per minute, summed by the labels ``by``: decisions come every few seconds to minutes, so
    per second would read 0.017."""
    return "60 * sum by ({0}) (rate({1}[$__rate_interval]))".format(by, counter)


def time_to_limit(limit_free_bytes: str) -> str:
    """Seconds until a log dir's free space falls to a limit at its current fill rate (none while it is not
    filling; 0 once past the limit)."""
    lines = (
        "clamp_min(",
        "  ({free} - on ({labels}) {limit})",
        "  / on ({labels})",
        "  (-deriv({free}[{window}]) > 0),",
        "  0",
        ")",
    )
    return "\n".join(lines).format(
        free=recorded(FREE_BYTES), limit=recorded(limit_free_bytes), labels=VOLUME_LABELS, window=FILL_RATE_WINDOW
    )


def target(ref_id: str, expr: str, legend: str) -> prometheus.Dataquery:
    return prometheus.Dataquery().ref_id(ref_id).datasource(DATASOURCE).expr(expr).legend_format(legend).range()


def targets(*queries: Sequence[str]) -> List[prometheus.Dataquery]:
    """Targets A, B, C, ... from (expr, legend) pairs."""
    return [target(chr(ord("A") + index), expr, legend) for index, (expr, legend) in enumerate(queries)]


def table_legend() -> common_builders.VizLegendOptions:
    # A broker count of log dirs makes tens of series: a table with the last value sorts and reads better than a list.
    return (
        common_builders.VizLegendOptions()
        .display_mode(common.LegendDisplayMode.TABLE)
        .placement(common.LegendPlacement.BOTTOM)
        .show_legend(True)
        .calcs(["lastNotNull"])
    )


def all_series_tooltip() -> common_builders.VizTooltipOptions:
    return common_builders.VizTooltipOptions().mode(common.TooltipDisplayMode.MULTI).sort(common.SortOrder.DESCENDING)


def time_series(
    title: str,
    description: str,
    unit: str,
    queries: Sequence[Sequence[str]],
    width: int = HALF_WIDTH,
    min_value: Optional[float] = None,
    max_value: Optional[float] = None,
) -> timeseries.Panel:
    panel = (
        timeseries.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .unit(unit)
        .targets(targets(*queries))
        .span(width)
        .height(PANEL_HEIGHT)
        .legend(table_legend())
        .tooltip(all_series_tooltip())
        .fill_opacity(0)
    )
    if min_value is not None:
        panel = panel.min(min_value)
    if max_value is not None:
        panel = panel.max(max_value)
    return panel


def dashed(pattern: str) -> dashboard.DynamicConfigValue:
    return dashboard.DynamicConfigValue(id_val="custom.lineStyle", value={"fill": pattern, "dash": [10, 10]})


def disk_space_panels() -> Iterator[PanelBuilder]:
    yield (
        time_series(
            "Free space against the soft and hard limits",
            "Free bytes of each log dir as the throttle sees them "
            "(cluster_broker_log_dir:headroom_volume_available_bytes:min, solid) and the free bytes at which its soft "
            "limit (dashed) and hard limit (dotted) trip "
            "(cluster_broker_log_dir:headroom_volume_soft_limit_free_bytes: "
            "and ..._hard_limit_free_bytes:), all recorded by the rule file of the alert rules. Between the "
            "two limits producers are throttled; at the hard limit they "
            "are paused.",
            "bytes",
            [
                (recorded(FREE_BYTES), "broker {{broker_id}} {{log_dir}} free"),
                (recorded(SOFT_LIMIT_FREE_BYTES), "broker {{broker_id}} {{log_dir}} soft limit"),
                (recorded(HARD_LIMIT_FREE_BYTES), "broker {{broker_id}} {{log_dir}} hard limit"),
            ],
            min_value=0,
        )
        .override_by_regexp(".* soft limit$", [dashed("dash")])
        .override_by_regexp(".* hard limit$", [dashed("dot")])
    )
    yield time_series(
        "Time to the soft and hard limits",
        "How long each log dir's free space lasts before it reaches a limit, at the rate it fell over the last "
        f"{FILL_RATE_WINDOW} (a linear fit, as the KafkaLogDirFillingUp alert has it). A log dir whose free space "
        "is not falling has no line; 0 means the limit is reached.",
        "s",
        [
            (time_to_limit(SOFT_LIMIT_FREE_BYTES), "broker {{broker_id}} {{log_dir}} to the soft limit"),
            (time_to_limit(HARD_LIMIT_FREE_BYTES), "broker {{broker_id}} {{log_dir}} to the hard limit"),
        ],
        min_value=0,
    )
    yield time_series(
        "Free space as the guard and the plugin see it",
        "Usable bytes of each log dir as the guard measured them at its last decision "
        "(headroom_guard_volume_available_bytes) and as the Strimzi quota plugin did "
        "(strimzi_quotas_available_bytes; the plugin of every broker observes every log dir, the least figure is "
        "shown). The two should agree; a gap means one of them reads stale or partial data.",
        "bytes",
        [
            (scraped("headroom_guard_volume_available_bytes"), "guard: broker {{broker_id}} {{log_dir}}"),
            (
                "min by (cluster, remote_broker_id, log_dir) ({0})".format(scraped("strimzi_quotas_available_bytes")),
                "plugin: broker {{remote_broker_id}} {{log_dir}}",
            ),
        ],
        width=FULL_WIDTH,
        min_value=0,
    )


def guard_state_code() -> str:
    """0 OPEN, 1 THROTTLE, 2 PAUSE: headroom_guard_state is 1 for the current state and 0 for the others."""
    by_guard = "sum by (cluster, job, instance) ({0})"
    return "{0}\n+ 2 * {1}".format(
        by_guard.format(scraped("headroom_guard_state", 'state="THROTTLE"')),
        by_guard.format(scraped("headroom_guard_state", 'state="PAUSE"')),
    )


def plugin_state_code() -> str:
    """The plugin's factor in the guard's codes: 0 when 1 (open), 2 when 0 (paused), 1 in between (throttled)."""
    factor = scraped("strimzi_quotas_throttle_factor")
    return "({0} < bool 1)\n+ ({0} == bool 0)".format(factor)


def state_panel() -> statetimeline.Panel:
    mapping = dashboard.ValueMap(
        options={
            str(code): dashboard.ValueMappingResult(text=state, color=color, index=code)
            for code, (state, color) in enumerate(STATE_CODES)
        }
    )
    return (
        statetimeline.Panel()
        .title("State: open, throttled or paused")
        .description(
            "The guard's state at each decision (headroom_guard_state) and the state the Strimzi quota plugin's "
            "throttle factor on each broker amounts to (1 open, between 0 and 1 throttled, 0 paused)."
        )
        .datasource(DATASOURCE)
        .unit("none")
        .mappings([mapping])
        .targets(
            targets(
                (guard_state_code(), "guard {{instance}}"),
                (plugin_state_code(), "plugin on broker {{observing_broker_id}}"),
            )
        )
        .span(HALF_WIDTH)
        .height(PANEL_HEIGHT)
        .show_value(common.VisibilityMode.NEVER)
        .merge_values(True)
        .legend(common_builders.VizLegendOptions().show_legend(False))
    )


def throttling_panels() -> Iterator[PanelBuilder]:
    yield time_series(
        "Throttle factor",
        "The factor the declared produce rates are scaled by, from 1 (open) to 0 (paused): the guard's "
        "(headroom_guard_throttle_factor, at its last decision) and the Strimzi quota plugin's on each broker "
        "(strimzi_quotas_throttle_factor).",
        "percentunit",
        [
            (scraped("headroom_guard_throttle_factor"), "guard {{instance}}"),
            (scraped("strimzi_quotas_throttle_factor"), "plugin on broker {{observing_broker_id}}"),
        ],
        min_value=0,
        max_value=1,
    )
    yield state_panel()
    yield time_series(
        "Brokers and log dirs observed",
        "Brokers and log dirs with known figures in the guard's last decision and in each plugin's last check. A "
        "drop means a broker did not answer: its log dirs no longer count towards the decision.",
        "short",
        [
            (scraped("headroom_guard_active_brokers"), "guard {{instance}}: brokers"),
            (scraped("headroom_guard_active_log_dirs"), "guard {{instance}}: log dirs"),
            (scraped("strimzi_quotas_active_brokers"), "plugin on broker {{observing_broker_id}}: brokers"),
            (scraped("strimzi_quotas_active_log_dirs"), "plugin on broker {{observing_broker_id}}: log dirs"),
        ],
        min_value=0,
    )
    yield time_series(
        "Plugin checks past the limit and fallbacks",
        "Per minute, on each broker: log dirs the Strimzi quota plugin found at or past its limit "
        "(strimzi_quotas_limit_violated_total), and checks where it applied its fallback factor because its last "
        "complete observation was too old (strimzi_quotas_fallback_throttle_factor_applied_total).",
        "cpm",
        [
            (
                per_minute(scraped("strimzi_quotas_limit_violated_total"), "cluster, instance"),
                "{{instance}}: log dirs past the limit",
            ),
            (
                per_minute(scraped("strimzi_quotas_fallback_throttle_factor_applied_total"), "cluster, instance"),
                "{{instance}}: fallback factor applied",
            ),
        ],
        min_value=0,
    )


def producer_panels() -> Iterator[PanelBuilder]:
    yield time_series(
        "Produce throttle time per user and client id",
        "How long brokers delay produce responses to hold clients to their quotas (Kafka's "
        "kafka_server_produce_throttle_time, the average over Kafka's quota window; the worst broker is shown). "
        "Under the Strimzi plugin Kafka keeps one sensor for every client, without user or client id.",
        "ms",
        [
            (
                "max by (cluster, user, client_id) ({0})".format(scraped("kafka_server_produce_throttle_time")),
                "user {{user}}, client id {{client_id}}",
            )
        ],
        min_value=0,
    )
    yield time_series(
        "Produce byte rate per user and client id",
        "Bytes per second produced, summed over the brokers (Kafka's kafka_server_produce_byte_rate, per quota "
        "entity). Under the Strimzi plugin Kafka keeps one sensor for every client, without user or client id.",
        "Bps",
        [
            (
                "sum by (cluster, user, client_id) ({0})".format(scraped("kafka_server_produce_byte_rate")),
                "user {{user}}, client id {{client_id}}",
            )
        ],
        min_value=0,
    )
    yield time_series(
        "Plugin produce quota per broker, after the throttle factor",
        "The produce quota of every client on each broker under the Strimzi quota plugin "
        "(strimzi_quotas_produce_byte_rate) times the broker's throttle factor: what a client may produce to that "
        "broker now.",
        "Bps",
        [
            (
                "{0}\n* on (cluster, job, instance)\n{1}".format(
                    scraped("strimzi_quotas_produce_byte_rate"), scraped("strimzi_quotas_throttle_factor")
                ),
                "{{instance}}",
            )
        ],
        width=FULL_WIDTH,
        min_value=0,
    )


def guard_panels() -> Iterator[PanelBuilder]:
    yield time_series(
        "Guard decisions by outcome",
        "Decisions per minute: applied (quotas changed), unchanged, failed (the guard could not read the cluster "
        "or change its quotas), and decisions whose history files or snapshot topic could not be written "
        "(headroom_guard_decisions_total, headroom_guard_record_failures_total).",
        "cpm",
        [
            (per_minute(scraped("headroom_guard_decisions_total"), "cluster, outcome"), "{{outcome}}"),
            (per_minute(scraped("headroom_guard_record_failures_total"), "cluster"), "not recorded"),
        ],
        min_value=0,
    )
    yield time_series(
        "Client quota changes by the guard",
        "Client quota entities the guard changed per minute (headroom_guard_quota_changes_total); the dashboard's "
        "annotations mark the same changes on every panel.",
        "cpm",
        [(per_minute(scraped("headroom_guard_quota_changes_total"), "cluster, job, instance"), "{{instance}}")],
        min_value=0,
    )
    yield time_series(
        "Time since the guard's last decision",
        "Seconds since the guard's last completed decision (headroom_guard_last_decision_timestamp_seconds) beside "
        "its interval (headroom_guard_interval_seconds): a line that climbs past the interval means decisions stopped.",
        "s",
        [
            ("time() - {0}".format(scraped("headroom_guard_last_decision_timestamp_seconds")), "{{instance}}"),
            (scraped("headroom_guard_interval_seconds"), "{{instance}} interval"),
        ],
        min_value=0,
    )
    yield time_series(
        "Duration of the guard's last decision",
        "How long the guard's last decision took: reading every log dir, deciding and changing the quotas "
        "(headroom_guard_last_decision_duration_seconds).",
        "s",
        [(scraped("headroom_guard_last_decision_duration_seconds"), "{{instance}}")],
        min_value=0,
    )
    yield time_series(
        "Replica moves by the guard's relief",
        "With the guard's relieve option: bytes of its replica moves still running "
        "(headroom_guard_relief_moving_bytes), and bytes of the moves it started and that ended in place in each "
        "interval (headroom_guard_relief_planned_bytes_total, headroom_guard_relief_moved_bytes_total). Moves come "
        "before the throttle: a log dir relieved in time never throttles producers.",
        "bytes",
        [
            (scraped("headroom_guard_relief_moving_bytes"), "{{instance}} moving"),
            (
                "sum by (cluster, instance) (increase({0}[$__rate_interval]))".format(
                    scraped("headroom_guard_relief_planned_bytes_total")
                ),
                "{{instance}} started",
            ),
            (
                "sum by (cluster, instance) (increase({0}[$__rate_interval]))".format(
                    scraped("headroom_guard_relief_moved_bytes_total")
                ),
                "{{instance}} moved",
            ),
        ],
        min_value=0,
    )
    yield time_series(
        "Relief steps by action",
        "With the guard's relieve option: its relief steps per minute by action (started, moving, finished, settling, "
        "blocked, failed; headroom_guard_relief_steps_total), and the log dirs at relieve_at that its last plan could "
        "not bring to relieve_to (headroom_guard_relief_blocked_log_dirs; the guard's log says why).",
        "short",
        [
            (per_minute(scraped("headroom_guard_relief_steps_total"), "cluster, action"), "{{action}} per minute"),
            (scraped("headroom_guard_relief_blocked_log_dirs"), "{{instance}} blocked log dirs"),
        ],
        min_value=0,
    )


def all_option(multi: bool) -> dashboard.VariableOption:
    if multi:
        return dashboard.VariableOption(selected=True, text=["All"], value=["$__all"])
    return dashboard.VariableOption(selected=True, text="All", value="$__all")


def label_variable(
    name: str, label: str, description: str, selector: str, multi: bool, all_value: str
) -> dashboard_builders.QueryVariable:
    return (
        dashboard_builders.QueryVariable(name)
        .label(label)
        .description(description)
        .datasource(DATASOURCE)
        .query("label_values({{{0}}}, {1})".format(selector, name))
        .refresh(dashboard.VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(dashboard.VariableSort.ALPHABETICAL_ASC)
        .multi(multi)
        .include_all(True)
        .all_value(all_value)
        .current(all_option(multi))
    )


def variables() -> list:
    return [
        dashboard_builders.DatasourceVariable("datasource").label("Data source").type("prometheus"),
        # One cluster at a time; All (.*) also matches series without a cluster label, for a Prometheus that scrapes
        # a single cluster and adds none.
        label_variable(
            "cluster",
            "Cluster",
            "The cluster label of the scrape targets and of the rule files",
            CLUSTER_SERIES,
            multi=False,
            all_value=".*",
        ),
        label_variable(
            "job",
            "Job",
            "Scrape jobs of the guard and of the Kafka nodes' JMX exporters",
            TARGET_SERIES + ', cluster=~"$cluster"',
            multi=True,
            all_value=".+",
        ),
        label_variable(
            "instance",
            "Instance",
            "The guard's and the Kafka nodes' scrape targets",
            TARGET_SERIES + ', cluster=~"$cluster", job=~"$job"',
            multi=True,
            all_value=".+",
        ),
    ]


def quota_change_annotation() -> dashboard_builders.AnnotationQuery:
    return (
        dashboard_builders.AnnotationQuery()
        .name("Quota changes by the guard")
        .datasource(DATASOURCE)
        .enable(True)
        .icon_color("orange")
        .expr(
            "sum by (cluster, instance) (increase({0}[$__rate_interval])) > 0".format(
                scraped("headroom_guard_quota_changes_total")
            )
        )
    )


ROWS = (
    ("Disk space per broker and log dir", disk_space_panels),
    ("Throttling: the guard and the Strimzi quota plugin", throttling_panels),
    ("Producers (Kafka's client quota sensors)", producer_panels),
    ("The guard's decisions", guard_panels),
)


def build_dashboard() -> dashboard.Dashboard:
    panel_ids = itertools.count(1)  # stable ids: Grafana keys panel links and edits on them
    builder = (
        dashboard_builders.Dashboard(TITLE)
        .uid(UID)
        .description(
            "Disk headroom of a Kafka cluster and what the headroom.kafka guard and the Strimzi quota plugin do "
            "about it: free space against the limits, throttle factor and state, producers' throttling, decisions."
        )
        .tags(["kafka", "headroom", "quotas", "disk"])
        .readonly()  # provisioned from this file: changes belong in the generator
        .tooltip(dashboard.DashboardCursorSync.CROSSHAIR)
        .time("now-6h", "now")
        .refresh("1m")
        .variables(variables())
        .annotation(quota_change_annotation())
    )
    for row_title, panels in ROWS:
        builder = builder.with_row(dashboard_builders.Row(row_title).id(next(panel_ids)))
        for panel in panels():
            builder = builder.with_panel(panel.id(next(panel_ids)))
    return builder.build()


def render() -> str:
    """The dashboard as the committed file holds it: sorted keys, so that a new SDK release reorders nothing."""
    return json.dumps(build_dashboard(), cls=JSONEncoder, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def linter_configuration(dashboard_json: Dict[str, Any]) -> Dict[str, Any]:
    """The dashboard-linter's exclusions for the dashboard: the job and instance rules on the panels of recording
    rules. The linter matches an exclusion by panel title (it ignores a target index), so a panel that mixed
    recorded and scraped series would hide a scraped series without job or instance: refused."""
    excluded = []
    for panel in query_panels(dashboard_json):
        recorded_targets = [
            any(name in target["expr"] for name in RECORDED_SERIES) for target in panel.get("targets") or []
        ]
        if any(recorded_targets) and not all(recorded_targets):
            raise ValueError("panel {0!r} mixes recording rules and scraped series".format(panel["title"]))
        if any(recorded_targets):
            excluded.append({"panel": panel["title"]})
    reason = (
        "Recording rules hold one series per log dir of a cluster, whichever scrape target observed it, so they have "
        "no job or instance label; they are selected by cluster only."
    )
    return {
        "exclusions": {
            rule: {"reason": reason, "entries": [dict(entry) for entry in excluded]} for rule in LINTER_EXCLUDED_RULES
        }
    }


def render_linter_configuration(dashboard_text: str) -> str:
    """The linter's ``.lint`` file beside the dashboard, which it reads from the dashboard's directory."""
    header = (
        "# Grafana dashboard-linter configuration of headroom-kafka.json, written by python -m dashboards.generate.\n"
    )
    body = yaml.safe_dump(linter_configuration(json.loads(dashboard_text)), sort_keys=False, width=120)
    return header + body


def generated_files(dashboard_path: str) -> Dict[str, str]:
    """{path: text} of the dashboard and of the linter's configuration beside it."""
    text = render()
    lint_path = os.path.join(os.path.dirname(os.path.abspath(dashboard_path)), LINTER_CONFIGURATION)
    return {dashboard_path: text, lint_path: render_linter_configuration(text)}


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m dashboards.generate", description=__doc__.split("\n\n", maxsplit=1)[0]
    )
    parser.add_argument("--check", action="store_true", help="exit 1 when a file differs from the generated one")
    parser.add_argument(
        "--output",
        default=DASHBOARD_FILE,
        help="where to write the dashboard; the linter's .lint goes beside it (default: %(default)s)",
    )
    options = parser.parse_args(argv)
    stale = []
    for path, text in generated_files(options.output).items():
        if options.check:
            try:
                with open(path, encoding="utf-8") as stream:
                    if stream.read() == text:
                        continue
            except FileNotFoundError:
                pass
            stale.append(path)
            continue
        with open(path, "w", encoding="utf-8") as stream:
            stream.write(text)
    for path in stale:
        print(f"{path} is not what the generator produces: run python -m dashboards.generate")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
