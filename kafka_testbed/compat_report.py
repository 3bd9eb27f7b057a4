"""The compatibility table: what the compatibility suite (tests/compat) found on each Kafka release.

The suite appends one line per test phase to ``build/compat/results/*.jsonl`` (release, check, phase, outcome,
seconds, reason); ``python -m kafka_testbed.compat_report`` folds them into one row per check and a column per
release and writes the reStructuredText table ``make compat`` puts in the documentation. The conformance suite's
JUnit reports of each release (``build/compat/conformance/<version>-<mode>.xml``) add a second table: the test
cluster's model against each release, a row per test file.
"""

import argparse
import glob
import json
import os
import sys
from xml.etree import ElementTree

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS_DIR = os.path.join(ROOT, "build", "compat", "results")
CONFORMANCE_DIR = os.path.join(ROOT, "build", "compat", "conformance")
TABLE = os.path.join(ROOT, "docs", "docsite", "rst", "compatibility_matrix.rst")
_MARKS = {"passed": "pass", "failed": "FAIL", "skipped": "n/a", "xfailed": "fault"}


def record_line(release, check, report):
    """One phase of one test as a result line."""
    reason = None
    outcome = report.outcome
    if hasattr(report, "wasxfail"):
        # An expected failure: the release's own fault, which the check proved is there (the reason names it).
        outcome, reason = "xfailed", report.wasxfail
    elif report.skipped and isinstance(report.longrepr, tuple):
        reason = str(report.longrepr[2]).removeprefix("Skipped: ")
    return {
        "release": release,
        "check": check,
        "phase": report.when,
        "outcome": outcome,
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
        elif line["outcome"] in ("skipped", "xfailed") and entry["outcome"] != "failed":
            entry["outcome"] = line["outcome"]
            entry["reason"] = line["reason"]
    return results


def _release_key(release):
    version, _dash, mode = release.partition("-")
    return tuple(int(part) for part in version.split(".")), mode


def render(results, title="Compatibility matrix"):
    """The table as reStructuredText: a row per release, a column per check (lettered, the checks listed below it;
    ``pass 41s``, ``FAIL 12s``, ``fault``, ``n/a``) and the release's total time, then the reasons of the cells that
    are known faults or not applicable."""
    releases = sorted({release for release, _check in results}, key=_release_key)
    checks = sorted({check for _release, check in results})
    letters = [chr(ord("A") + index) if index < 26 else f"C{index}" for index in range(len(checks))]
    header = ["release", *letters, "total"]
    rows = []
    for release in releases:
        row = [release]
        for check in checks:
            entry = results.get((release, check))
            if entry is None:
                row.append("")
            else:
                mark = _MARKS[entry["outcome"]]
                row.append(f"{mark} {entry['seconds']:.0f}s" if entry["outcome"] in ("passed", "failed") else mark)
        total = sum(e["seconds"] for (r, _c), e in results.items() if r == release)
        rows.append([*row, f"{total:.0f}s"])
    legend = [f"- {letter}: ``{check}``" for letter, check in zip(letters, checks, strict=True)]
    out = [".. _ansible_collections.headroom.kafka.docsite.compatibility_matrix:", "", title, "=" * len(title), ""]
    out += [
        "Written by ``make compat`` from what the compatibility suite (``tests/compat``) did on each Apache Kafka",
        "release and metadata mode: ``pass`` and ``FAIL`` with the seconds the check took, ``fault`` where the check",
        "proved a known fault of the release, ``n/a`` where the release lacks what the check needs (the reasons",
        "follow the table).",
        "",
    ]
    out += _grid(header, rows)
    out += ["The checks (``tests/compat``):", "", *legend, ""]
    for outcome, heading in (
        ("xfailed", "Known faults of the release (the check proved the fault is there):"),
        ("skipped", "Not applicable:"),
    ):
        reasons = sorted({(r, c, e["reason"]) for (r, c), e in results.items() if e["outcome"] == outcome})
        if reasons:
            out += [heading, ""]
            out += [f"- {release}, ``{check}``: {reason}" for release, check, reason in reasons]
            out.append("")
    return "\n".join(out)


def conformance_counts(junit_text):
    """{test file: {passed, failed, skipped}} from a JUnit report of the conformance suite."""
    counts = {}
    for case in ElementTree.fromstring(junit_text).iter("testcase"):
        parts = case.get("classname", "").split(".")
        module = next((part for part in parts if part.startswith("test_")), parts[-1]) + ".py"
        entry = counts.setdefault(module, {"passed": 0, "failed": 0, "skipped": 0})
        if case.find("failure") is not None or case.find("error") is not None:
            entry["failed"] += 1
        elif case.find("skipped") is not None:
            entry["skipped"] += 1
        else:
            entry["passed"] += 1
    return counts


def render_conformance(by_release):
    """The conformance table: a row per test file, a column per release, ``passed/failed/skipped`` counts."""
    releases = sorted(by_release, key=_release_key)
    files = sorted({name for counts in by_release.values() for name in counts})
    header = ["conformance test file", *releases]
    rows = []
    for name in files:
        row = [f"``{name}``"]
        for release in releases:
            entry = by_release[release].get(name)
            row.append(f"{entry['passed']}/{entry['failed']}/{entry['skipped']}" if entry else "")
        rows.append(row)
    title = "The model against each release"
    out = [
        title,
        "-" * len(title),
        "",
        "The test cluster's conformance suite (``tests/kafka_testbed``, the model's tests) run on real Kafka of each",
        "release: passed/failed/skipped per test file. The model follows Kafka 4.3, so a failure on another release is",
        "a way that release differs from 4.3; skipped tests pin model-only behaviour or need what the release lacks",
        "(``kafka_testbed/README.md`` lists every difference from 4.3).",
        "",
    ]
    return "\n".join(out + _grid(header, rows))


def _grid(header, rows):
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]
    rule = " ".join("=" * width for width in widths)

    def line(cells):
        return " ".join(str(cell).ljust(width) for cell, width in zip(cells, widths, strict=True)).rstrip()

    return [rule, line(header), rule, *(line(row) for row in rows), rule, ""]


def read_conformance(directory=CONFORMANCE_DIR):
    """{release: counts} from every ``<release>.xml`` in ``directory``."""
    by_release = {}
    for path in sorted(glob.glob(os.path.join(directory, "*.xml"))):
        with open(path, encoding="utf-8") as handle:
            by_release[os.path.basename(path)[: -len(".xml")]] = conformance_counts(handle.read())
    return by_release


def read_results(directory=RESULTS_DIR):
    lines = []
    for path in sorted(glob.glob(os.path.join(directory, "*.jsonl"))):
        with open(path, encoding="utf-8") as handle:
            lines += [json.loads(text) for text in handle if text.strip()]
    return fold(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m kafka_testbed.compat_report", description=__doc__.split("\n", maxsplit=1)[0]
    )
    parser.add_argument("--results", default=RESULTS_DIR, help="directory of the suite's result lines")
    parser.add_argument("--conformance", default=CONFORMANCE_DIR, help="directory of the conformance JUnit reports")
    parser.add_argument("--output", default=TABLE, help="where to write the table ('-': standard output)")
    args = parser.parse_args(argv)
    results = read_results(args.results)
    if not results:
        print(f"error: no results in {args.results}; run the compatibility suite first (make compat)", file=sys.stderr)
        return 1
    text = render(results)
    conformance = read_conformance(args.conformance)
    if conformance:
        text += "\n" + render_conformance(conformance)
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
