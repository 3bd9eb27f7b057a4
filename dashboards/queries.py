"""The PromQL of the committed dashboard (``headroom-kafka.json``), read from the JSON as Grafana reads it.

``dashboard_queries()`` gives every panel target's and annotation's query with the template variables replaced the way
Grafana replaces them when each variable is at "All" (its ``allValue``) and ``$__rate_interval`` is a given duration:
what Grafana would send to Prometheus, ready to run against a real server. Only the standard library is needed, so a
test that runs the queries does not need the Grafana SDK that generates the file.
"""

import json
import os
import re
from typing import Any, Dict, List, NamedTuple, Optional

DASHBOARD_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "headroom-kafka.json")
# Grafana's spellings of a variable: $name, ${name} or ${name:format}, and the deprecated [[name]] (the same pattern as
# the dashboard-linter's).
VARIABLE_PATTERN = re.compile(r"\$(\w+)|\$\{([^}]+)\}|\[\[([^\[\]]+)\]\]")
# Grafana's own interval variables, as it fills them in for a query; $__rate_interval is the one our queries use.
GLOBAL_INTERVALS = ("__rate_interval", "__interval", "__range")


class DashboardQuery(NamedTuple):
    source: str  # the panel's title, or "annotation: <name>"
    ref_id: str  # the target's refId ("" for an annotation)
    expr: str


def load_dashboard(path: str = DASHBOARD_FILE) -> Dict[str, Any]:
    with open(path, encoding="utf-8") as stream:
        return json.load(stream)


def query_panels(dashboard: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Every panel but the rows, those inside a collapsed row included, in the dashboard's order."""
    found = []

    def visit(panel):
        if panel.get("type") != "row":
            found.append(panel)
        for nested in panel.get("panels") or []:
            visit(nested)

    for panel in dashboard.get("panels") or []:
        visit(panel)
    return found


def variable_name(match: "re.Match[str]") -> str:
    """The variable a VARIABLE_PATTERN match names, without a ``:format`` suffix."""
    spelled = next(group for group in match.groups() if group is not None)
    return spelled.split(":", 1)[0]


def all_values(dashboard: Dict[str, Any], rate_interval: str = "1m") -> Dict[str, str]:
    """Each template variable's value at "All" (its allValue; else its current value), and Grafana's interval
    variables set to ``rate_interval``."""
    values = {name: rate_interval for name in GLOBAL_INTERVALS}
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable.get("includeAll") and variable.get("allValue") is not None:
            values[variable["name"]] = variable["allValue"]
            continue
        current = (variable.get("current") or {}).get("value")
        if isinstance(current, list):
            current = "|".join(current)
        if current is not None:
            values[variable["name"]] = current
    return values


def substitute(expr: str, values: Dict[str, str]) -> str:
    """``expr`` with every variable replaced by its value, inside label matchers too; an unknown variable is an
    error rather than a query that silently matches nothing."""

    def value_of(match):
        name = variable_name(match)
        if name not in values:
            raise ValueError("no value for the variable {0!r} in {1!r}".format(name, expr))
        return values[name]

    return VARIABLE_PATTERN.sub(value_of, expr)


def dashboard_queries(
    dashboard: Optional[Dict[str, Any]] = None,
    values: Optional[Dict[str, str]] = None,
    rate_interval: str = "1m",
) -> List[DashboardQuery]:
    """Every query of the dashboard (the committed file by default): each panel target's, then each annotation's,
    with the variables substituted (``values`` overrides the "All" values, e.g. ``{"cluster": "test"}``)."""
    if dashboard is None:
        dashboard = load_dashboard()
    chosen = dict(all_values(dashboard, rate_interval), **(values or {}))
    queries = []
    for panel in query_panels(dashboard):
        for target in panel.get("targets") or []:
            queries.append(DashboardQuery(panel["title"], target.get("refId", ""), substitute(target["expr"], chosen)))
    for annotation in dashboard.get("annotations", {}).get("list", []):
        if annotation.get("expr"):
            queries.append(
                DashboardQuery("annotation: " + annotation["name"], "", substitute(annotation["expr"], chosen))
            )
    return queries
