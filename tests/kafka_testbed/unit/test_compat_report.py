"""The compatibility table folds the suite's result lines into a row per check and a column per release."""
# pylint: disable=missing-function-docstring

from kafka_testbed.compat_report import conformance_counts, fold, render, render_conformance


def _line(release, check, phase, outcome, seconds, reason=None):
    return {
        "release": release,
        "check": check,
        "phase": phase,
        "outcome": outcome,
        "seconds": seconds,
        "reason": reason,
    }


LINES = [
    _line("4.4.0-kraft", "test_a.py::test_x", "setup", "passed", 3.0),
    _line("4.4.0-kraft", "test_a.py::test_x", "call", "passed", 10.0),
    _line("4.4.0-kraft", "test_a.py::test_x", "teardown", "passed", 1.0),
    _line("3.3.2-kraft", "test_a.py::test_x", "setup", "skipped", 0.5, "not in Kafka 3.3.2 (kraft): no SCRAM"),
    _line("3.3.2-kraft", "test_a.py::test_x", "teardown", "passed", 0.0),
    _line("3.3.2-zookeeper", "test_a.py::test_x", "call", "failed", 7.0),
    _line("3.3.2-zookeeper", "test_a.py::test_x", "teardown", "passed", 2.0),
    _line("10.0.0-kraft", "test_b.py::test_y", "call", "passed", 1.0),
]


def test_phases_fold_into_one_outcome_with_their_seconds():
    results = fold(LINES)
    assert results[("4.4.0-kraft", "test_a.py::test_x")] == {"outcome": "passed", "seconds": 14.0, "reason": None}
    assert results[("3.3.2-kraft", "test_a.py::test_x")]["outcome"] == "skipped"
    assert results[("3.3.2-zookeeper", "test_a.py::test_x")] == {"outcome": "failed", "seconds": 9.0, "reason": None}


def test_the_table_has_a_row_per_release_in_version_order_a_column_per_check_and_the_reasons():
    text = render(fold(LINES))
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("release ") and line.endswith("total"))
    assert header.split() == ["release", "A", "B", "total"]
    rows = [line.split() for line in lines if line[:1].isdigit()]
    assert [row[0] for row in rows] == ["3.3.2-kraft", "3.3.2-zookeeper", "4.4.0-kraft", "10.0.0-kraft"]
    assert rows[1][1:] == ["FAIL", "9s", "9s"]
    assert rows[2][1:] == ["pass", "14s", "14s"]
    assert "- A: ``test_a.py::test_x``" in lines and "- B: ``test_b.py::test_y``" in lines
    assert "- 3.3.2-kraft, ``test_a.py::test_x``: not in Kafka 3.3.2 (kraft): no SCRAM" in text


JUNIT = """<testsuites><testsuite name="pytest">
<testcase classname="tests.kafka_testbed.test_topics" name="test_a"/>
<testcase classname="tests.kafka_testbed.test_topics" name="test_b"><failure message="x"/></testcase>
<testcase classname="tests.kafka_testbed.test_quorum.TestLeader" name="test_c"><skipped message="m"/></testcase>
<testcase classname="tests.kafka_testbed.test_quorum.TestLeader" name="test_d"><error message="setup"/></testcase>
</testsuite></testsuites>"""


def test_conformance_reports_count_outcomes_per_test_file_and_release():
    counts = conformance_counts(JUNIT)
    assert counts == {
        "test_topics.py": {"passed": 1, "failed": 1, "skipped": 0},
        "test_quorum.py": {"passed": 0, "failed": 1, "skipped": 1},
    }
    text = render_conformance({"4.4.0-kraft": counts, "3.3.2-kraft": {"test_topics.py": counts["test_topics.py"]}})
    header = next(line for line in text.splitlines() if line.startswith("conformance test file"))
    assert header.split()[3:] == ["3.3.2-kraft", "4.4.0-kraft"]
    row = next(line for line in text.splitlines() if line.startswith("``test_quorum.py``"))
    assert row.split()[1:] == ["0/1/1"]
