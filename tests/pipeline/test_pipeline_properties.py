"""The pipeline fed generated hostile input: snapshot and traffic lines (random JSON values, non-finite and huge
numbers, negative and huge broker ids, unicode and very long volume names, out-of-range and odd date-times, binary
garbage), file names with every character Hadoop or Spark gives a meaning to, and whole command-line runs.

Whatever the input: no exception, rows read = rows used + rows rejected, every rejection has a reason, and what is
accepted passes every check (broker ids Kafka's, sizes known, stamps within the bounds the run reports). A command
line run prints exactly one JSON line and exits 0, or prints nothing on stdout and ends in one failure line (exit 1
or 2); no secret of a kafka:// URL reaches any stream or file.

Examples are derandomized (the same cases on every run); each test prints how many it ran.
"""

import json
import os
import sys
import tempfile

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from pipeline_cli import run_cli

from headroom_pipeline import checks, ingest

pytestmark = pytest.mark.slow
PASSWORD = "Pr0perty-Sekr3t"
# Enough cases to cover every kind of hostile line many times over, few enough for about two minutes on two cores.
READER_EXAMPLES = 18
FILE_NAME_EXAMPLES = 12
URL_EXAMPLES = 30  # refused before Spark starts: a fraction of a second each
COMMAND_LINE_EXAMPLES = 2  # Spark's JVM, every stage and the report: about 25 seconds each
# Command-line runs bound the timeline small: a generated history spanning years fails fast (exit 1) instead of
# computing for minutes.
COMMAND_LINE_MAX_TIMELINE_ROWS = 200_000


def examples(count):
    return settings(
        max_examples=count,
        deadline=None,
        derandomize=True,
        database=None,
        print_blob=False,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    )


# -- hostile values ---------------------------------------------------------------------------------------------------
NUMBERS = st.one_of(
    st.integers(),
    st.sampled_from([0, -1, 1, 2**31 - 1, 2**31, -(2**31), 2**63 - 1, 2**63, -(2**63) - 1, 10**30, 10**400]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([float("nan"), float("inf"), float("-inf"), 1e308, 5e-324, 0.5, 1.0, -0.0]),
    st.sampled_from(["12", "1e3", "", "NaN"]),
)
TEXT = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["", " ", "\x00", "ü" * 300, "v" * 5000, "/data/0", "/data/1", "\u2028", "日本語"]),
)
SCALARS = st.one_of(NUMBERS, TEXT, st.booleans(), st.none())
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)),
    max_leaves=8,
)
ODD_STAMPS = st.sampled_from(
    [
        "0000-01-01T00:00:00Z",
        "9999-12-31T23:59:59-23:59",
        "0001-01-01T00:00:00+23:59",
        "1970-01-01T00:00:00Z",
        "1969-12-31T23:59:59Z",
        "9999-12-31T23:59:59Z",
        "+10000-01-01T00:00:00Z",
        "2026-02-30T00:00:00Z",
        "2026-11-22T24:00:00Z",
        "2026-11-22T04:07:60Z",
        "2026-11-22T04:07:09+24:00",
        "2026-11-22T04:07",
        "2026-11-22",
        "2026-11-22T04:07:09",
        "2026-11-22t04:07:09,5z",
        "2026-11-22T04:07:09.123456789Z",
        "２０２６-11-22T04:07:09Z",
        "yesterday",
        "",
    ]
)


@st.composite
def stamps(draw):
    """Odd forms, or any field values with any zone."""
    if draw(st.booleans()):
        return draw(ODD_STAMPS)
    fields = [
        draw(st.integers(0, 10000)),
        draw(st.integers(0, 13)),
        draw(st.integers(0, 32)),
        draw(st.integers(0, 25)),
        draw(st.integers(0, 61)),
        draw(st.integers(0, 61)),
    ]
    zone = draw(st.sampled_from(["Z", "z", "+00:00", "-23:59", "+23:59", "+05:30", "-0800", "+24", ""]))
    return "{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}".format(*fields) + zone


NEAR_BULK = st.builds(
    "2026-11-22T{:02d}:{:02d}:{:02d}Z".format, st.integers(0, 23), st.integers(0, 59), st.integers(0, 59)
)
HOSTILE_VOLUMES = st.lists(
    st.one_of(
        st.fixed_dictionaries({}, optional={"VolumeName": TEXT, "Capacity": NUMBERS, "Consumed": NUMBERS}), JSON_VALUES
    ),
    max_size=3,
)
LIMIT_TYPES = ["MinFreeBytes", "MinFreePercentage", "ConsumedSpace"]
HOSTILE_LIMITS = st.one_of(
    st.fixed_dictionaries({"type": st.sampled_from(LIMIT_TYPES + ["Bogus"]), "level": NUMBERS}), JSON_VALUES
)


@st.composite
def tame_volumes(draw):
    names = draw(
        st.lists(st.sampled_from(["/data/0", "/data/1", "/data/2", "ü/" + "v" * 300]), unique=True, max_size=3)
    )
    volumes = []
    for name in names:
        capacity = draw(st.integers(0, 2**63 - 1))
        volumes.append({"VolumeName": name, "Capacity": capacity, "Consumed": draw(st.integers(0, capacity))})
    return volumes


TAME_LIMITS = st.one_of(
    st.none(), st.fixed_dictionaries({"type": st.sampled_from(LIMIT_TYPES), "level": st.integers(0, 100)})
)
TAME_SNAPSHOTS = st.fixed_dictionaries(
    {
        "SnapshotAt": NEAR_BULK,
        "BrokerId": st.integers(0, 3),
        "ClusterId": st.sampled_from(["c1", "c2"]),
        "Volumes": tame_volumes(),
        "SoftLimit": TAME_LIMITS,
        "HardLimit": TAME_LIMITS,
    }
)
HOSTILE_SNAPSHOT_FIELDS = {
    "SnapshotAt": stamps(),
    "BrokerId": st.one_of(NUMBERS, TEXT),
    "ClusterId": TEXT,
    "Volumes": HOSTILE_VOLUMES,
    "SoftLimit": HOSTILE_LIMITS,
    "HardLimit": HOSTILE_LIMITS,
    "Extra": JSON_VALUES,
}
TAME_TRAFFIC = st.fixed_dictionaries(
    {
        "ts": NEAR_BULK,
        "broker_id": st.integers(0, 3),
        "user": st.sampled_from(["alice", None]),
        "client_id": st.sampled_from(["app", "日本語"]),
        "topic": st.sampled_from(["events", None]),
        "bytes_in": st.integers(0, 2**63 - 1),
        "bytes_out": st.integers(0, 10**9),
    }
)
HOSTILE_TRAFFIC_FIELDS = {
    "ts": stamps(),
    "broker_id": NUMBERS,
    "user": JSON_VALUES,
    "client_id": TEXT,
    "topic": TEXT,
    "bytes_in": NUMBERS,
    "bytes_out": NUMBERS,
}


def with_hostile_fields(tame, hostile):
    """A tame record (valid by construction) with none, one or two fields replaced by hostile values or removed."""

    @st.composite
    def build(draw):
        record = dict(draw(tame))
        for field in draw(st.lists(st.sampled_from(sorted(hostile)), max_size=2, unique=True)):
            if draw(st.integers(0, 4)) == 0:
                record.pop(field, None)
            else:
                record[field] = draw(hostile[field])
        return record

    return build()


SNAPSHOTS = with_hostile_fields(TAME_SNAPSHOTS, HOSTILE_SNAPSHOT_FIELDS)
TRAFFIC = with_hostile_fields(TAME_TRAFFIC, HOSTILE_TRAFFIC_FIELDS)
# Garbage that is one line to every reader: no \n or \r, and a first byte that is not UTF-8 (so never blank).
BINARY_LINES = st.binary(max_size=60).map(lambda data: b"\xff" + data.replace(b"\n", b"").replace(b"\r", b""))


def lines_of(records):
    """(file content, records in it): JSON as Python writes it (NaN and Infinity included), binary lines as they
    are, and blank lines, which are not records."""
    return st.lists(
        st.one_of(
            records.map(_json_line),
            records.map(_json_line),
            JSON_VALUES.map(_json_line),
            BINARY_LINES,
            st.sampled_from([b"", b"   "]),
        ),
        min_size=2,
        max_size=40,
    ).map(lambda lines: (b"".join(line + b"\n" for line in lines), sum(1 for line in lines if line.strip(b" "))))


def _json_line(value):
    return json.dumps(value).encode("utf-8")


# -- what every reading must give ----------------------------------------------------------------------------------
def _assert_accounted(result, expected_records):
    """The accepted rows, once every record is accounted for."""
    used, rejected = result.rows.collect(), result.rejected.collect()
    note(f"read {result.read}, used {len(used)}, rejected {len(rejected)}; bounds {result.time_bounds.describe()}")
    assert result.read == expected_records
    assert len(used) + len(rejected) == result.read
    assert all(row.reason and row.source for row in rejected)
    return used


def _assert_in_bounds(instant, bounds):
    stamp = checks.micros(instant.replace(tzinfo=checks.UTC))
    assert checks.micros(checks.EARLIEST_INSTANT) <= stamp <= checks.micros(checks.LATEST_INSTANT)
    assert bounds.lower is None or stamp >= checks.micros(bounds.lower)
    assert bounds.upper is None or stamp <= checks.micros(bounds.upper)


def test_generated_snapshot_and_traffic_lines_are_each_used_or_rejected_with_a_reason(spark, tmp_path_factory):
    base = tmp_path_factory.mktemp("lines")
    cases, tally = [], {"snapshots.jsonl": [0, 0], "traffic.jsonl": [0, 0]}

    @examples(READER_EXAMPLES)
    @given(snapshot_file=lines_of(SNAPSHOTS), traffic_file=lines_of(TRAFFIC))
    def reading(snapshot_file, traffic_file):
        cases.append(1)
        directory = tempfile.mkdtemp(dir=base)
        for name, (content, records), load in (
            ("snapshots.jsonl", snapshot_file, ingest.load_snapshots),
            ("traffic.jsonl", traffic_file, ingest.load_traffic),
        ):
            path = os.path.join(directory, name)
            with open(path, "wb") as handle:
                handle.write(content)
            result = load(spark, path)
            accepted = _assert_accounted(result, records)
            tally[name] = [
                total + figure for total, figure in zip(tally[name], (result.read, len(accepted)), strict=True)
            ]
            for row in accepted:
                _assert_in_bounds(row.at if name == "snapshots.jsonl" else row.ts, result.time_bounds)
                assert 0 <= row.broker_id <= checks.BROKER_ID_MAX
                if name == "snapshots.jsonl":
                    names = [volume.log_dir for volume in row.volumes]
                    assert all(names) and len(set(names)) == len(names)
                    assert all(0 <= volume.usable_bytes <= volume.total_bytes for volume in row.volumes)
                else:
                    assert row.bytes_in >= 0 and row.bytes_out >= 0

    reading()  # pylint: disable=no-value-for-parameter
    print(
        f"\n{len(cases)} generated cases of snapshot and traffic lines; (records, accepted): {tally}", file=sys.stderr
    )


# -- file names --------------------------------------------------------------------------------------------------------
NAME_CHARACTERS = st.one_of(
    st.sampled_from(list(":[]{}*?\\ %+#,;=@!$&'()~^`_.-")),
    st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"),
)
FILE_NAMES = st.text(NAME_CHARACTERS, min_size=1, max_size=30).filter(lambda name: name not in (".", ".."))


def test_generated_file_names_are_read_as_the_exact_files_they_name(spark, tmp_path_factory):
    base = tmp_path_factory.mktemp("names")
    cases = []

    @examples(FILE_NAME_EXAMPLES)
    @given(directory_name=FILE_NAMES, file_name=FILE_NAMES, parquet=st.booleans())
    def reading(directory_name, file_name, parquet):
        cases.append(1)
        directory = os.path.join(tempfile.mkdtemp(dir=base), directory_name)
        os.makedirs(directory)
        path = os.path.join(directory, file_name + (".parquet" if parquet else ""))
        good = {
            "SnapshotAt": "2026-11-22T04:00:00Z",
            "BrokerId": 1,
            "ClusterId": file_name,
            "Volumes": [{"VolumeName": "/data/0", "Capacity": 10, "Consumed": 1}],
        }
        bad = dict(good, BrokerId=-1)
        if parquet:
            import pyarrow as pa  # pylint: disable=import-outside-toplevel
            import pyarrow.parquet as pq  # pylint: disable=import-outside-toplevel

            pq.write_table(pa.Table.from_pylist([good, bad]), path)
        else:
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
        result = ingest.load_snapshots(spark, path)
        assert [row.cluster for row in _assert_accounted(result, 2)] == [file_name]
        assert [row.source for row in result.rejected.collect()] == [path]

    reading()  # pylint: disable=no-value-for-parameter
    print(f"\n{len(cases)} generated file names", file=sys.stderr)


# -- whole command-line runs -------------------------------------------------------------------------------------------
MALFORMED_URLS = st.builds(
    lambda prefix, user, host, path, parameter, tail: f"{prefix}{user}{host}{path}{parameter}{tail}",
    st.sampled_from(["kafka://", "KAFKA://", "kafka:/"]),
    st.sampled_from(["", f"alice:{PASSWORD}@", f"{PASSWORD}@", f"alice:{PASSWORD}:x@"]),
    st.sampled_from(["broker-1:9092", "[::1", "b-1:9092,b-2:9092", ""]),
    st.sampled_from(["", "/", "/a/b", "/topic"]),
    st.sampled_from(
        [
            f"?sasl_password={PASSWORD}",
            f"?ssl_password={PASSWORD}&security_protocol=SSL",
            f"?x_secret={PASSWORD}",
            f"/sasl_password={PASSWORD}",
            f"?sasl_username=alice@example.com&sasl_password={PASSWORD}",
            "",
        ]
    ),
    st.sampled_from(["", "&request_timeout=1", "#frag"]),
).filter(lambda url: PASSWORD in url)


def _assert_command_result(result, out):
    note(f"exit {result.returncode}; stderr ends {result.stderr[-1500:]!r}")
    assert "Traceback" not in result.stderr
    if result.returncode == 0:
        lines = result.stdout.splitlines()
        assert len(lines) == 1
        printed = json.loads(lines[0])
        assert printed["rows_read"] == printed["rows_used"] + printed["rows_rejected"]
        assert os.path.isfile(os.path.join(out, "summary.json"))
        return
    assert result.returncode in (1, 2)
    assert result.stdout == ""
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("headroom_pipeline: failed: ") if result.returncode == 1 else ": error: " in last


def _assert_no_secret_in(directory, *texts):
    assert all(PASSWORD not in text for text in texts)
    for root, _dirs, names in os.walk(directory):
        for file_name in names:
            with open(os.path.join(root, file_name), "rb") as handle:
                assert PASSWORD.encode() not in handle.read(), file_name


def test_generated_malformed_kafka_urls_are_refused_without_their_secrets(tmp_path_factory):
    base = tmp_path_factory.mktemp("urls")
    cases = []

    @examples(URL_EXAMPLES)
    @given(url=MALFORMED_URLS)
    def refusing(url):
        cases.append(url)
        directory = tempfile.mkdtemp(dir=base)
        out = os.path.join(directory, "out")
        result = run_cli("run", "--snapshots", url, "--out", out, "--quiet")
        _assert_command_result(result, out)
        assert result.returncode == 2
        _assert_no_secret_in(directory, result.stdout, result.stderr)

    refusing()  # pylint: disable=no-value-for-parameter
    print(f"\n{len(cases)} generated malformed kafka:// URLs", file=sys.stderr)


def test_generated_command_line_runs_print_one_json_line_or_fail_in_one_line(tmp_path_factory):
    base = tmp_path_factory.mktemp("runs")
    outcomes = []

    @examples(COMMAND_LINE_EXAMPLES)
    @given(name=FILE_NAMES, snapshot_file=lines_of(SNAPSHOTS))
    def running(name, snapshot_file):
        directory = tempfile.mkdtemp(dir=base)
        out, location = os.path.join(directory, "out"), os.path.join(directory, name)
        with open(location, "wb") as handle:
            handle.write(snapshot_file[0])
        result = run_cli(
            "run",
            "--snapshots",
            location,
            "--out",
            out,
            "--min-available-ratio",
            "0.1",
            "--quiet",
            "--max-timeline-rows",
            str(COMMAND_LINE_MAX_TIMELINE_ROWS),
        )
        _assert_command_result(result, out)
        outcomes.append(result.returncode)
        if result.returncode == 0:
            assert json.loads(result.stdout)["rows_read"] == snapshot_file[1]

    running()  # pylint: disable=no-value-for-parameter
    print(f"\n{len(outcomes)} generated command-line runs; exit statuses {outcomes}", file=sys.stderr)
