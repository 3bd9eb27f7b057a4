"""The Grafana dashboard (dashboards/headroom-kafka.json) against the rules of Grafana's dashboard-linter, and the
committed file against its generator (dashboards/generate.py).

The linter (github.com/grafana/dashboard-linter) is a Go program outside the project's Python toolchain, so each of its
default rules is a test below, checked on the JSON the way the linter reads it, with PromQL parsed by promql-parser
(Python bindings of a Rust PromQL parser) instead of Prometheus' Go parser. Where the linter is lax the tests are
strict: every panel type needs a unit and the templated datasource, the counter rule looks at metric names (the linter
only catches a counter written without label matchers), and ``increase`` must use ``$__rate_interval`` like ``rate``.

The exclusions are those of the linter's own configuration file, dashboards/.lint (written by the generator, so the
real linter passes too): the job and instance rules do not apply to the panels of recording rules
(``level:metric:operations``), which hold one series per log dir of a cluster whoever observed it and so carry no job
or instance label. Such a panel may select nothing else.
"""

import datetime
import importlib.util
import json
import os
import re

import promql_parser
import pytest
import yaml
from guard_pages import guard_page

from dashboards import generate, queries

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DASHBOARD = queries.load_dashboard()
PANELS = queries.query_panels(DASHBOARD)
TEMPLATES = DASHBOARD["templating"]["list"]
ANNOTATIONS = [annotation for annotation in DASHBOARD["annotations"]["list"] if annotation.get("expr")]
LINTER_CONFIGURATION = os.path.join(os.path.dirname(queries.DASHBOARD_FILE), generate.LINTER_CONFIGURATION)
with open(LINTER_CONFIGURATION, encoding="utf-8") as _stream:
    EXCLUSIONS = yaml.safe_load(_stream)["exclusions"]

# The linter replaces Grafana's global variables with sample durations no dashboard would write, then recognises
# $__rate_interval by its duration: 8869990787ms. promql-parser overflows on that many milliseconds, so the same
# duration is spelled in larger units.
RATE_INTERVAL_SAMPLE = "102d15h53m10s787ms"
RATE_INTERVAL = datetime.timedelta(milliseconds=8869990787)
GLOBAL_SAMPLES = {
    "__rate_interval": RATE_INTERVAL_SAMPLE,
    "__interval": "56d8h10m56s611ms",  # the linter's 4867856611ms
    "__range": "70d5h56m10s749ms",  # the linter's 6069770749ms
    "__interval_ms": "7781188786",
    "__range_ms": "6737667980",
    "__range_s": "9397795485",
}
RATE_FUNCTIONS = {"rate", "irate", "increase"}
RECORDING_RULE = re.compile(r"^[a-zA-Z_]\w*:")

# Valid units (the linter's list, from Grafana's packages/grafana-data/src/valueFormats/categories.ts).
VALID_UNITS = set(
    # Misc, short, acceleration, angle, area, computation
    "none string short percent percentunit humidity dB hex0x hex sci locale pixel accMS2 accFS2 accG degree radian "
    "grad arcmin arcsec areaM2 areaF2 areaMI2 flops mflops gflops tflops pflops eflops zflops yflops "
    # Concentration, currency
    "ppm conppb conngm3 conngNm3 conμgm3 conμgNm3 conmgm3 conmgNm3 congm3 congNm3 conmgdL conmmolL currencyUSD "
    "currencyGBP currencyEUR currencyJPY currencyRUB currencyUAH currencyBRL currencyDKK currencyISK currencyNOK "
    "currencySEK currencyCZK currencyCHF currencyPLN currencyBTC currencymBTC currencyμBTC currencyZAR currencyINR "
    "currencyKRW currencyIDR currencyPHP currencyVND "
    # Data, data rate
    "bytes decbytes bits decbits kbytes deckbytes mbytes decmbytes gbytes decgbytes tbytes dectbytes pbytes decpbytes "
    "pps binBps Bps binbps bps KiBs Kibits KBs Kbits MiBs Mibits MBs Mbits GiBs Gibits GBs Gbits TiBs Tibits TBs "
    "Tbits PiBs Pibits PBs Pbits "
    # Date and time
    "dateTimeAsIso dateTimeAsIsoNoDateIfToday dateTimeAsUS dateTimeAsUSNoDateIfToday dateTimeAsLocal "
    "dateTimeAsLocalNoDateIfToday dateTimeAsSystem dateTimeFromNow "
    # Energy
    "watt kwatt megwatt gwatt mwatt Wm2 voltamp kvoltamp voltampreact kvoltampreact watth watthperkg kwatth kwattm "
    "amph kamph mamph joule ev amp kamp mamp volt kvolt mvolt dBm ohm kohm Mohm farad µfarad nfarad pfarad ffarad "
    "henry mhenry µhenry lumens "
    # Flow, force, hash rate, mass, length, pressure
    "flowgpm flowcms flowcfs flowcfm litreh flowlpm flowmlpm lux forceNm forcekNm forceN forcekN Hs KHs MHs GHs THs "
    "PHs EHs massmg massg masslb masskg masst lengthmm lengthin lengthft lengthm lengthkm lengthmi pressurembar "
    "pressurebar pressurekbar pressurepa pressurehpa pressurekpa pressurehg pressurepsi "
    # Radiation, rotational speed, temperature
    "radbq radci radgy radrad radsv radmsv radusv radrem radexpckg radr radsvh radmsvh radusvh rotrpm rothz rotrads "
    "rotdegs celsius fahrenheit kelvin "
    # Time, throughput, velocity, volume, boolean
    "hertz ns µs ms s m h d dtdurationms dtdurations dthms dtdhms timeticks clockms clocks cps ops reqps rps wps iops "
    "cpm opm rpm wpm mps mpm velocityms velocitykmh velocitymph velocityknot mlitre litre m3 Nm3 dm3 gallons bool "
    "bool_yes_no bool_on_off".split()
)


# -- reading the dashboard as the linter does ---------------------------------------------------------------------
def lint_expand(expr):
    """The linter's variable expansion: outside double-quoted strings only, Grafana's globals become their sample
    values and any other variable its own name; inside label matchers ``$job`` stays as written."""
    parts = expr.split('"')
    for index in range(0, len(parts), 2):
        parts[index] = queries.VARIABLE_PATTERN.sub(
            lambda match: GLOBAL_SAMPLES.get(queries.variable_name(match), queries.variable_name(match)), parts[index]
        )
    return '"'.join(parts)


def parse(expr):
    return promql_parser.parse(lint_expand(expr))


def children(node):
    if isinstance(node, promql_parser.AggregateExpr):
        return [node.expr] + ([node.param] if isinstance(node.param, promql_parser.Expr) else [])
    if isinstance(node, promql_parser.BinaryExpr):
        return [node.lhs, node.rhs]
    if isinstance(node, promql_parser.Call):
        return [argument for argument in node.args if isinstance(argument, promql_parser.Expr)]
    if isinstance(node, promql_parser.MatrixSelector):
        return [node.vector_selector]
    if isinstance(node, (promql_parser.ParenExpr, promql_parser.UnaryExpr, promql_parser.SubqueryExpr)):
        return [node.expr]
    return []


def walk(node, parents=()):
    """Every node of a PromQL AST with its ancestors, outermost first (the Go parser's Walk path)."""
    yield node, parents
    for child in children(node):
        yield from walk(child, parents + (node,))


def selectors(node):
    return [found for found, _parents in walk(node) if isinstance(found, promql_parser.VectorSelector)]


def matchers(selector):
    return {matcher.name: (matcher.op, matcher.value) for matcher in selector.matchers.matchers}


def metric_name(selector):
    if selector.name:
        return selector.name
    return matchers(selector).get("__name__", (None, ""))[1]


def template(name):
    found = [variable for variable in TEMPLATES if variable["name"] == name]
    return found[0] if found else None


def datasource_uid(datasource):
    return datasource.get("uid") if isinstance(datasource, dict) else datasource


TARGETS = [
    pytest.param(panel, target, id="{0} {1}".format(panel["title"], target.get("refId")))
    for panel in PANELS
    for target in panel.get("targets") or []
] + [
    pytest.param({"title": "annotation"}, annotation, id="annotation " + annotation["name"])
    for annotation in ANNOTATIONS
]
PANEL_PARAMS = [pytest.param(panel, id=panel["title"]) for panel in PANELS]


# -- the generator --------------------------------------------------------------------------------------------------
def test_the_committed_dashboard_and_linter_configuration_are_what_the_generator_produces():
    for path, text in generate.generated_files(queries.DASHBOARD_FILE).items():
        with open(path, encoding="utf-8") as stream:
            assert stream.read() == text, "run python -m dashboards.generate and commit " + os.path.relpath(path, ROOT)


def test_the_generator_check_mode_agrees(tmp_path, capsys):
    stale = tmp_path / "dashboard.json"
    assert generate.main(["--check", "--output", str(stale)]) == 1
    stale.write_text("{}\n", encoding="utf-8")
    assert generate.main(["--check", "--output", str(stale)]) == 1
    assert generate.main(["--output", str(stale)]) == 0
    assert generate.main(["--check", "--output", str(stale)]) == 0
    assert json.loads(stale.read_text(encoding="utf-8"))["uid"] == generate.UID
    (tmp_path / ".lint").write_text("exclusions: {}\n", encoding="utf-8")
    assert generate.main(["--check", "--output", str(stale)]) == 1
    assert "/.lint is not what the generator produces" in capsys.readouterr().out


def test_the_dashboard_is_ready_for_file_provisioning():
    # A fixed uid keeps links and the provisioned copy stable; an id would clash with the database's own.
    assert DASHBOARD["uid"] == "headroom-kafka" and "id" not in DASHBOARD
    assert "__inputs" not in DASHBOARD  # import-only placeholders that file provisioning does not resolve
    ids = [panel["id"] for panel in DASHBOARD["panels"]]
    assert len(ids) == len(set(ids)) and all(isinstance(panel_id, int) and panel_id > 0 for panel_id in ids)
    for panel in PANELS:
        ref_ids = [target["refId"] for target in panel["targets"]]
        assert len(ref_ids) == len(set(ref_ids)) and all(ref_ids), panel["title"]


# -- the linter's dashboard rules -----------------------------------------------------------------------------------
def test_template_datasource_rule():
    (datasource,) = [variable for variable in TEMPLATES if variable["type"] == "datasource"]
    assert datasource["name"] in ("datasource", "prometheus_datasource")
    assert datasource["label"] in ("Data source", "Prometheus data source")
    assert datasource["query"] == "prometheus"


@pytest.mark.parametrize("name", ["job", "instance"])
def test_template_job_and_instance_rules(name):
    variable = template(name)
    assert variable is not None, "missing the {0} template".format(name)
    assert datasource_uid(variable.get("datasource")) in ("$datasource", "${datasource}")
    assert variable["type"] == "query"
    assert variable["label"] == name.title()
    assert variable["multi"] is True
    assert variable["allValue"] == ".+"


@pytest.mark.parametrize(
    "variable", [item for item in TEMPLATES if item["type"] == "query"], ids=lambda item: item["name"]
)
def test_template_label_promql_rule(variable):
    query = variable["query"]["query"] if isinstance(variable["query"], dict) else variable["query"]
    function = re.fullmatch(r"(label_names|label_values|metrics|query_result)\((.+)\)", query, re.DOTALL)
    assert function, "invalid templated label query {0!r}".format(query)
    assert function.group(1) == "label_values"
    selector, label = function.group(2).rsplit(",", 1)
    assert re.fullmatch(r"[a-zA-Z_]\w*", label.strip())
    assert isinstance(parse(selector), promql_parser.VectorSelector)


def test_template_on_time_change_reload_rule():
    for variable in TEMPLATES:
        if variable["type"] == "query":
            assert variable["refresh"] == 2, variable["name"]


def test_uneditable_dashboard_rule():
    assert DASHBOARD.get("editable") is False


# -- the linter's panel rules ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("panel", PANEL_PARAMS)
def test_panel_datasource_rule(panel):
    assert datasource_uid(panel.get("datasource")) in ("$datasource", "${datasource}")
    for target in panel["targets"]:
        assert datasource_uid(target.get("datasource", "$datasource")) in ("$datasource", "${datasource}")


@pytest.mark.parametrize("panel", PANEL_PARAMS)
def test_panel_title_description_rule(panel):
    assert panel.get("title") and panel.get("description")


@pytest.mark.parametrize("panel", PANEL_PARAMS)
def test_panel_units_rule(panel):
    # Stricter than the linter, which lets value mappings stand in for a unit: the state panel has both.
    field_config = panel.get("fieldConfig") or {}
    assert field_config.get("defaults", {}).get("unit") in VALID_UNITS
    for override in field_config.get("overrides") or []:
        for item in override.get("properties") or []:
            if item["id"] == "unit":
                assert item["value"] in VALID_UNITS


@pytest.mark.parametrize("panel", PANEL_PARAMS)
def test_panel_no_targets_rule(panel):
    assert panel.get("targets")


# -- the linter's target rules --------------------------------------------------------------------------------------
@pytest.mark.parametrize("panel, target", TARGETS)
def test_target_promql_rule(panel, target):
    assert target.get("expr"), "an empty query"
    parse(target["expr"])  # raises ValueError with the parser's message


@pytest.mark.parametrize("panel, target", TARGETS)
def test_target_rate_interval_rule(panel, target):
    for node, parents in walk(parse(target["expr"])):
        if not isinstance(node, promql_parser.MatrixSelector):
            continue
        call = parents[-1] if parents else None
        if node.range == RATE_INTERVAL:
            assert isinstance(call, promql_parser.Call), "$__rate_interval used outside a function"
        elif isinstance(call, promql_parser.Call):
            # The linter asks it of rate and irate; increase over another range would not match them either.
            assert call.func.name not in RATE_FUNCTIONS, "{0}() should use $__rate_interval".format(call.func.name)


def excluded(rule, panel):
    """Whether dashboards/.lint excludes the rule on the panel, matched as the linter matches (by panel title)."""
    entries = (EXCLUSIONS.get(rule) or {}).get("entries") or []
    return any(entry.get("panel") == panel["title"] for entry in entries)


@pytest.mark.parametrize("label", ["job", "instance"])
@pytest.mark.parametrize("panel, target", TARGETS)
def test_target_job_and_instance_rules(panel, target, label):
    for selector in selectors(parse(target["expr"])):
        if excluded("target-{0}-rule".format(label), panel):
            assert RECORDING_RULE.match(metric_name(selector)), "excluded, yet not a recording rule: " + str(selector)
            assert label not in matchers(selector)
            continue
        assert matchers(selector).get(label) == (promql_parser.MatchOp.Re, "$" + label), str(selector)


def test_the_linter_exclusions_are_the_recording_rule_panels_only():
    assert set(EXCLUSIONS) == {"target-job-rule", "target-instance-rule"}
    recorded_panels = {
        panel["title"]
        for panel in PANELS
        if any(
            RECORDING_RULE.match(metric_name(found)) for t in panel["targets"] for found in selectors(parse(t["expr"]))
        )
    }
    for rule in EXCLUSIONS.values():
        assert rule["reason"]
        assert {entry["panel"] for entry in rule["entries"]} == recorded_panels
        assert all(set(entry) == {"panel"} for entry in rule["entries"])  # no dashboard or target index to mismatch


@pytest.mark.parametrize("panel, target", TARGETS)
def test_target_counter_agg_rule(panel, target):
    for node, parents in walk(parse(target["expr"])):
        if isinstance(node, promql_parser.VectorSelector) and metric_name(node).endswith("_total"):
            assert len(parents) >= 2 and isinstance(parents[-1], promql_parser.MatrixSelector), str(node)
            assert isinstance(parents[-2], promql_parser.Call) and parents[-2].func.name in RATE_FUNCTIONS, str(node)


# -- the dashboard's own rules --------------------------------------------------------------------------------------
@pytest.mark.parametrize("panel, target", TARGETS)
def test_every_series_is_selected_by_the_cluster_variable(panel, target):
    for selector in selectors(parse(target["expr"])):
        assert matchers(selector).get("cluster") == (promql_parser.MatchOp.Re, "$cluster"), str(selector)


def test_the_variables_narrow_each_other_down():
    assert [variable["name"] for variable in TEMPLATES] == ["datasource", "cluster", "job", "instance"]
    narrowed_by = {"cluster": set(), "job": {"cluster"}, "instance": {"cluster", "job"}}
    for name, earlier in narrowed_by.items():
        selector = parse(template(name)["query"][len("label_values(") :].rsplit(",", 1)[0])
        variables = {label for label, (_op, value) in matchers(selector).items() if value == "$" + label}
        assert variables == earlier, name
    # "All" of the cluster variable also matches series without a cluster label (a Prometheus of one cluster).
    assert template("cluster")["allValue"] == ".*"


def known_metrics():
    """Every metric the guard and the JMX exporter serve: the guard's rendered page after a decision, and the names
    the exporter's rules give the MBeans of a real broker (tests/unit/roles/test_jmx_exporter_rules.py)."""
    names = set(re.findall(r"^# TYPE (\S+) ", guard_page(), re.MULTILINE))
    rules_test = os.path.join(ROOT, "tests", "unit", "roles", "test_jmx_exporter_rules.py")
    spec = importlib.util.spec_from_file_location("jmx_exporter_rule_samples", rules_test)
    samples = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(samples)
    names.update(sample[3][0] for sample in samples.SAMPLES if sample[3] is not None)
    return names


def test_the_queried_metrics_are_served_by_the_guard_or_the_jmx_exporter():
    served = known_metrics()
    used = {
        metric_name(selector)
        for _panel, target in (item.values for item in TARGETS)
        for selector in selectors(parse(target["expr"]))
    }
    unknown = {name for name in used if not RECORDING_RULE.match(name)} - served
    assert unknown == set()
    assert {name for name in used if RECORDING_RULE.match(name)} == set(generate.RECORDED_SERIES)


# The throttles the rule files are rendered for: the guard with soft and hard limits, and the plugin with its one.
GRADED_GUARD = {
    "cluster": "east",
    "kafka_disk_guard": {
        "policy": "graded",
        "soft_limit": {"type": "min_free_percentage", "level": 20},
        "hard_limit": {"type": "min_free_percentage", "level": 10},
    },
}
PLUGIN = {
    "cluster": "east",
    "kafka_quotas": {"type": "strimzi", "min_available_ratio_per_volume": 0.1},
    "brokers": [{"broker_id": 1, "instance": "kafka-1:7071"}],
}


def recorded_by_the_rule_file(settings):
    alert_rules = pytest.importorskip("ansible_collections.headroom.kafka.plugins.module_utils.alert_rules")
    return {
        rule["record"]
        for group in alert_rules.render(settings)["groups"]
        for rule in group["rules"]
        if "record" in rule
    }


@pytest.mark.parametrize("settings", [GRADED_GUARD, PLUGIN], ids=["guard", "plugin"])
def test_the_free_space_series_is_recorded_by_the_rule_files(settings):
    assert generate.FREE_BYTES in recorded_by_the_rule_file(settings)


def test_the_limit_series_are_recorded_by_the_rule_files():
    assert {generate.SOFT_LIMIT_FREE_BYTES, generate.HARD_LIMIT_FREE_BYTES} <= recorded_by_the_rule_file(GRADED_GUARD)
    assert generate.HARD_LIMIT_FREE_BYTES in recorded_by_the_rule_file(PLUGIN)


# -- the queries a test against Prometheus runs ---------------------------------------------------------------------
def test_every_query_comes_out_with_its_variables_substituted():
    found = queries.dashboard_queries(rate_interval="2m")
    assert len(found) == len(TARGETS)
    for query in found:
        assert "$" not in query.expr and "[[" not in query.expr, query
        promql_parser.parse(query.expr)
    first_scraped = next(query for query in found if "job=" in query.expr)
    assert 'cluster=~".*", job=~".+", instance=~".+"' in first_scraped.expr
    assert any("[2m]" in query.expr for query in found)


def test_chosen_values_replace_the_all_values():
    found = queries.dashboard_queries(values={"cluster": "east", "job": "kafka", "instance": "broker-1:7071"})
    assert all('cluster=~"east"' in query.expr for query in found)
    assert any('job=~"kafka", instance=~"broker-1:7071"' in query.expr for query in found)


def test_an_unknown_variable_is_an_error():
    with pytest.raises(ValueError, match="nowhere"):
        queries.substitute('up{job=~"$nowhere"}', {"job": ".+"})
