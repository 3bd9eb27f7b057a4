"""The compatibility table: what the compatibility suite (tests/compat) found on each Kafka release.

The suite appends one line per test phase to ``build/compat/results/*.jsonl`` (release, check, phase, outcome,
seconds, reason); ``python -m kafka_testbed.compat_report`` folds them into one row per check and a column per
release and writes the reStructuredText table ``make compat`` puts in the documentation.
"""

import argparse
import glob
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS_DIR = os.path.join(ROOT, "build", "compat", "results")
TABLE = os.path.join(ROOT, "docs", "docsite", "rst", "compatibility_matrix.rst")
_MARKS = {"passed": "pass", "failed": "FAIL", "skipped": "n/a"}


def record_line(release, check, report):
    """One phase of one test as a result line."""
    reason = None
    if report.skipped and isinstance(report.longrepr, tuple):
        reason = str(report.longrepr[2]).removeprefix("Skipped: ")
    return {
        "release": release,
        "check": check,
        "phase": report.when,
        "outcome": report.outcome,
        "seconds": round(report.duration, 2),
        "reason": reason,
    }


def fold(lines):
    """{(release, check): {outcome, seconds, reason}}: failed if any phase failed, skipped if a phase was skipped,
    else passed; the seconds of every phase."""
    results = {}
    for line in lines:
        key = (line["release"], line["check"])
        entry = results.setdefault(key, {"outcome": "passed", "seconds": 0.0, "reason": None})
        entry["seconds"] += line["seconds"]
        if line["outcome"] == "failed":
            entry["outcome"] = "failed"
        elif line["outcome"] == "skipped" and entry["outcome"] != "failed":
            entry["outcome"] = "skipped"
            entry["reason"] = line["reason"]
    return results


def _release_key(release):
    version, _dash, mode = release.partition("-")
    return tuple(int(part) for part in version.split(".")), mode


def render(results, title="Compatibility matrix"):
    """The table as reStructuredText: a row per check, a column per release (``pass 41s``, ``FAIL 12s``, ``n/a``),
    then the reasons of the cells that are not applicable, and each release's total time."""
    releases = sorted({release for release, _check in results}, key=_release_key)
    checks = sorted({check for _release, check in results})
    header = ["check", *releases]
    rows = []
    for check in checks:
        row = [f"``{check}``"]
        for release in releases:
            entry = results.get((release, check))
            if entry is None:
                row.append("")
            else:
                mark = _MARKS[entry["outcome"]]
                row.append(mark if entry["outcome"] == "skipped" else f"{mark} {entry['seconds']:.0f}s")
        rows.append(row)
    totals = [sum(e["seconds"] for (r, _c), e in results.items() if r == release) for release in releases]
    rows.append(["**total**", *(f"{total:.0f}s" for total in totals)])
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    rule = " ".join("=" * width for width in widths)

    def line(cells):
        return " ".join(str(cell).ljust(width) for cell, width in zip(cells, widths)).rstrip()

    out = [f".. _compatibility_matrix:", "", title, "=" * len(title), ""]
    out += [
        "Written by ``make compat`` from what the compatibility suite (``tests/compat``) did on each Apache Kafka",
        "release and metadata mode: ``pass`` and ``FAIL`` with the seconds the check took, ``n/a`` where the",
        "release lacks what the check needs (the reasons follow the table).",
        "",
        rule,
        line(header),
        rule,
    ]
    out += [line(row) for row in rows]
    out += [rule, ""]
    reasons = sorted({(r, c, e["reason"]) for (r, c), e in results.items() if e["outcome"] == "skipped"})
    if reasons:
        out += ["Not applicable:", ""]
        out += [f"- {release}, ``{check}``: {reason}" for release, check, reason in reasons]
        out.append("")
    return "\n".join(out)


def read_results(directory=RESULTS_DIR):
    lines = []
    for path in sorted(glob.glob(os.path.join(directory, "*.jsonl"))):
        with open(path, encoding="utf-8") as handle:
            lines += [json.loads(text) for text in handle if text.strip()]
    return fold(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m kafka_testbed.compat_report", description=__doc__.split("\n")[0])
    parser.add_argument("--results", default=RESULTS_DIR, help="directory of the suite's result lines")
    parser.add_argument("--output", default=TABLE, help="where to write the table ('-': standard output)")
    args = parser.parse_args(argv)
    results = read_results(args.results)
    if not results:
        print(f"error: no results in {args.results}; run the compatibility suite first (make compat)", file=sys.stderr)
        return 1
    text = render(results)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w", encoding="utf-8") as handle:
            handle.write(text)
    failed = sorted({f"{r} {c}" for (r, c), e in results.items() if e["outcome"] == "failed"})
    for entry in failed:
        print(f"failed: {entry}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
