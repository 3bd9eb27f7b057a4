"""The HTML report: one static page with PNG charts, written to DIR/report/ beside the job's other outputs.

The report reads the job's outputs (report_data: reduced in Spark, so the driver only ever collects a few thousand
rows, whatever the fleet), draws the charts (report_charts) and renders the page (report_page, a Jinja2 template).

DIR/report/ holds:
  index.html                          the page (no JavaScript, no external assets, every value HTML-escaped)
  *.png                               the charts (report_charts says which)
"""

import os
from typing import TYPE_CHECKING, Any

from headroom_pipeline import report_charts, report_data, report_page

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

REPORT_DIR = "report"
INDEX = "index.html"


def write_report(spark: "SparkSession", out_dir: str, summary: dict[str, Any], max_clusters: int = 12) -> str:
    """Write DIR/report/index.html and its charts from the outputs in ``out_dir`` that the run of ``summary`` wrote;
    return the page's path."""
    report_dir = os.path.join(out_dir, REPORT_DIR)
    os.makedirs(report_dir, exist_ok=True)
    _remove_previous(report_dir)
    data = report_data.gather(spark, out_dir, summary, max_clusters)
    charts, clients_chart = report_charts.draw(report_dir, data)
    page = report_page.render(summary, data, charts, clients_chart)
    path = os.path.join(report_dir, INDEX)
    temporary = path + ".tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(page)
    os.replace(temporary, path)
    return path


def _remove_previous(report_dir):
    """Charts of clusters no longer shown must not linger beside the new page."""
    for name in os.listdir(report_dir):
        if name.endswith(".png") or name == INDEX:
            os.remove(os.path.join(report_dir, name))
