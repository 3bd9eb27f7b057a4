"""Hostile and unlucky input: implausible time stamps, timelines too large to compute, inputs with nothing usable,
file names Hadoop would misread, Spark failing mid-run, secrets in kafka:// URLs, and the one-JSON-line stdout."""

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pipeline_cli import run_cli

from headroom_pipeline import checks, decisions, ingest, job, schemas, sources, stages
from headroom_pipeline.config import ConfigError, PipelineConfig
from headroom_pipeline.stage_registry import FORECAST

PASSWORD = "hunter2-Sekr3t"
# Every character Hadoop or Spark gives a meaning to in a path, alone and (the hardest) a ':' with a glob character.
AWKWARD_NAMES = [
    "snap-2026-11-22T04:07:09Z",
    "a[1]",
    "b]c",
    "d{x,y}",
    "e*",
    "f?",
    "g h",
    "h%20i",
    "i+j",
    "j\\k",
    "ü ñ",
    "k:l[1]",
    "m#n",
    "_underscore",
    ".dot",
]


def snapshot(at="2026-11-22T04:00:00Z", broker_id=1, cluster="c1", volumes=None, **extra):
    value = {
        "SnapshotAt": at,
        "BrokerId": broker_id,
        "ClusterId": cluster,
        "HardLimit": {"type": "MinFreeBytes", "level": 100},
        "SoftLimit": {"type": "MinFreeBytes", "level": 200},
        "Volumes": volumes if volumes is not None else [{"VolumeName": "/data/0", "Capacity": 1000, "Consumed": 400}],
    }
    value.update(extra)
    return value


def write_lines(path, lines):
    path.write_text(
        "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines), encoding="utf-8"
    )
    return str(path)


def minutes(count, start_hour=4, cluster="c1"):
    return [
        snapshot(at=f"2026-11-22T{start_hour + minute // 60:02d}:{minute % 60:02d}:00Z", cluster=cluster)
        for minute in range(count)
    ]


def reasons_of(result):
    return sorted(row.reason for row in result.rejected.collect())


def assert_failed_cleanly(result, status, text):
    """Nothing on stdout, the reason as the last line of stderr, and no Python traceback."""
    assert result.returncode == status, result.stderr[-3000:]
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert (
        last.startswith("headroom_pipeline: failed: ")
        if status == 1
        else ("headroom_pipeline" in last and ": error: " in last)
    )
    assert text in result.stderr


def assert_one_json_line(result):
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert len(lines) == 1, result.stdout[:3000]
    return json.loads(lines[0])


# -- 1. time -------------------------------------------------------------------------------------------------------
def test_stamps_outside_the_instant_range_or_far_from_the_median_are_rejected_with_their_reason(spark, tmp_path):
    odd = (
        "1970-01-01T00:00:00Z",
        "0000-01-01T00:00:00Z",
        "9999-12-31T23:59:59-23:59",
        "0001-01-01T00:00:00+23:59",
        "2026-02-30T00:00:00Z",
        "9999-12-31T23:59:59Z",
    )
    lines = minutes(9) + [snapshot(at=at) for at in odd]
    result = ingest.load_snapshots(spark, write_lines(tmp_path / "s.jsonl", lines))
    assert result.read == 15 and result.rows.count() == 9
    out_of_range = "SnapshotAt must be a valid date-time from 1970-01-01T00:00:00Z to 9999-12-31T23:59:59Z"
    assert reasons_of(result) == sorted(
        [out_of_range] * 4
        + [
            "SnapshotAt is more than 366 days before the median SnapshotAt of its input (2026-11-22T04:04:00Z): "
            "a clock that was reset? (--since or --plausible-window accept older records)",
            "SnapshotAt is more than 366 days after the median SnapshotAt of its input (2026-11-22T04:04:00Z): "
            "a clock that ran ahead? (--until or --plausible-window accept later records)",
        ]
    )
    assert result.time_bounds.describe() == {
        "median": "2026-11-22T04:04:00Z",
        "since": "2025-11-21T04:04:00Z",
        "until": "2027-11-23T04:04:00Z",
    }


def test_since_and_until_replace_the_bounds_from_the_median_on_their_side(spark, tmp_path):
    late = [snapshot(at="2026-11-22T05:00:00Z"), snapshot(at="2026-11-22T06:00:00Z")]
    path = write_lines(tmp_path / "s.jsonl", minutes(5) + [snapshot(at="1970-01-01T00:00:00Z")] + late)
    result = ingest.load_snapshots(spark, path, window=checks.TimeWindow(since=checks.from_micros(0), spread=3600.0))
    assert result.rows.count() == 7, "1970 is accepted since --since says so; 05:00 is within an hour of the median"
    assert reasons_of(result) == [
        "SnapshotAt is more than 1 hour after the median SnapshotAt of its input (2026-11-22T04:02:00Z): "
        "a clock that ran ahead? (--until or --plausible-window accept later records)"
    ]
    result = ingest.load_snapshots(
        spark, path, window=checks.TimeWindow(since=checks.from_micros(0), until=checks.from_micros(1))
    )
    assert reasons_of(result) == ["SnapshotAt is after --until 1970-01-01T00:00:00.000001Z"] * 7


FAR_STAMPS = {
    "plausible": [],
    "reset clock": [snapshot(at="1970-01-01T00:00:00Z")],
    "clock ahead": [snapshot(at="2030-01-01T00:00:00Z")],
    "both, and a record also bad otherwise": [
        snapshot(at="1970-01-01T00:00:00Z", volumes=[{"VolumeName": "", "Capacity": 1, "Consumed": 0}]),
        snapshot(at="9000-01-01T00:00:00Z", broker_id=-1),
    ],
    "not objects": ["[1, 2]", '"2030-01-01T00:00:00Z"'],
}
WINDOWS = {
    "median": checks.TimeWindow(),
    "since": checks.TimeWindow(since=checks.from_micros(0), spread=3600.0),
    "until": checks.TimeWindow(until=checks.from_micros(checks.micros(checks.LATEST_INSTANT)), spread=3600.0),
    "both": checks.TimeWindow(
        since=checks.from_micros(0), until=checks.from_micros(checks.micros(checks.EARLIEST_INSTANT) + 1)
    ),
}


# Every kind of far stamp under the median's bounds, and the stamps far on both sides under each bound a caller gives:
# each branch (the median's bounds reject a record, or nothing is rejected by them) and each window and stamp kind, at
# a Spark job's cost per case rather than for all 20 combinations.
FIRST_USE_CASES = [(far, "median") for far in FAR_STAMPS] + [
    ("both, and a record also bad otherwise", window) for window in WINDOWS if window != "median"
]


@pytest.mark.parametrize("far, window", FIRST_USE_CASES, ids=str)
def test_the_first_use_finds_the_bounds_on_the_way_with_the_same_result(spark, tmp_path, far, window):
    """Given the caller's first use, the loader runs no pass of its own for the median: the first use observes it, and
    runs again on frames made with its bounds only when they reject a record. Either way the result is the one of
    the loader that finds the median first."""
    path = write_lines(tmp_path / "s.jsonl", minutes(5) + [snapshot(at="2026-11-22T05:30:00Z")] + FAR_STAMPS[far])
    uses = []
    settled = ingest.load_snapshots(
        spark, path, window=WINDOWS[window], first_use=lambda used: uses.append(used.rows.count())
    )
    first = ingest.load_snapshots(spark, path, window=WINDOWS[window])
    assert (settled.read, settled.time_bounds.describe()) == (first.read, first.time_bounds.describe())
    assert sorted(map(tuple, settled.rows.collect())) == sorted(map(tuple, first.rows.collect()))
    assert reasons_of(settled) == reasons_of(first)
    bounded_by_median = any(
        reason.startswith("SnapshotAt is more than") and "median" in reason for reason in reasons_of(first)
    )
    assert len(uses) == (2 if bounded_by_median else 1)
    assert settled.counts() == {"checked": first.read, "rejected": len(reasons_of(first))}


# A whole job each: none rejected, and rejected both by the median's bounds and by the other checks.
@pytest.mark.parametrize("far", ["plausible", "both, and a record also bad otherwise"], ids=str)
def test_the_snapshots_are_read_once_whether_or_not_a_record_was_rejected(spark, tmp_path, monkeypatch, far):
    """The forecast and the decision timeline read the checked rows the job wrote (volumes/), never the snapshots
    again: with the input gone once it was read (and its rejected records written), the decisions are those of the
    messages the checks accepted, volume-less messages and exact copies included."""
    lines = minutes(5) + [snapshot(at="2026-11-22T04:01:00Z", volumes=[]), snapshot(broker_id=2)] + FAR_STAMPS[far]
    lines += [snapshot(at="2026-11-22T04:03:00Z")]  # a copy of a message, read twice
    path = write_lines(tmp_path / "s.jsonl", lines)
    expected = ingest.load_snapshots(spark, write_lines(tmp_path / "kept.jsonl", lines))

    def remove_then_forecast(run):  # rejected records are read again for rejected/, only when there are some
        os.remove(path)
        return stages.forecast_volumes(run)

    pipeline = [(stage, remove_then_forecast if stage is FORECAST else work) for stage, work in job.PIPELINE]
    monkeypatch.setattr(job, "PIPELINE", tuple(pipeline))
    out = tmp_path / "out"
    summary = job.run(
        PipelineConfig(snapshots=path, out=str(out), min_available_ratio=0.1, report=False, progress=False)
    )
    assert not os.path.exists(path)
    assert summary["rows_rejected"] == len(reasons_of(expected))
    timeline = decisions.decision_timeline(
        expected.accepted_raw, PipelineConfig(snapshots=path, out="", min_available_ratio=0.1)
    )
    written = spark.read.parquet(str(out / "decisions"))
    columns = ["cluster", "at", "policy", "throttle_factor", "state", "violations", "brokers_considered"]
    assert sorted(map(repr, written.select(*columns).collect())) == sorted(
        map(repr, timeline.select(*columns).collect())
    )


def test_traffic_stamps_are_held_to_the_same_rules(spark, tmp_path):
    good = {
        "ts": "2026-11-22T04:00:00Z",
        "broker_id": 1,
        "user": "u",
        "client_id": "c",
        "topic": "t",
        "bytes_in": 1,
        "bytes_out": 0,
    }
    lines = [good] * 3 + [
        dict(good, ts="1970-01-01T00:00:00Z"),
        dict(good, ts="0000-01-01T00:00:00Z"),
        dict(good, broker_id=2**31),
    ]
    result = ingest.load_traffic(spark, write_lines(tmp_path / "t.jsonl", lines))
    assert result.read == 6 and result.rows.count() == 3
    assert reasons_of(result) == [
        "broker_id must be a broker id, a whole number from 0 to 2147483647",
        "ts is more than 366 days before the median ts of its input (2026-11-22T04:00:00Z): a clock that was reset? "
        "(--since or --plausible-window accept older records)",
        "ts must be a valid date-time from 1970-01-01T00:00:00Z to 9999-12-31T23:59:59Z",
    ]


def test_a_timeline_too_large_is_refused_before_it_is_built(spark, tmp_path):
    path = write_lines(
        tmp_path / "s.jsonl", [snapshot(at="2026-11-22T04:00:00Z"), snapshot(at="2026-11-22T06:00:00Z", broker_id=2)]
    )
    messages = ingest.load_snapshots(spark, path).rows
    config = PipelineConfig(snapshots=path, out="", max_timeline_rows=240)
    with pytest.raises(
        decisions.TimelineTooLarge,
        match=r"cluster 'c1' would judge 242 rows .* more than --max-timeline-rows 240: it spans "
        r"2026-11-22T04:00:00Z to 2026-11-22T06:00:00Z, 121 check instants every 60 s for 2 volume",
    ):
        decisions.decision_timeline(messages, config)
    assert (
        decisions.decision_timeline(messages, PipelineConfig(snapshots=path, out="", max_timeline_rows=242)).count()
        == 121
    )


def test_the_forecasts_volume_spans_size_the_timeline_as_the_volume_rows_do(spark, tmp_path):
    from headroom_pipeline import forecast

    lines = [
        snapshot(at="2026-11-22T04:00:00Z"),
        snapshot(at="2026-11-22T05:30:10Z", broker_id=2),
        snapshot(
            at="2026-11-22T04:10:00Z",
            volumes=[
                {"VolumeName": "/data/0", "Capacity": 9, "Consumed": 1},
                {"VolumeName": "/data/1", "Capacity": 9, "Consumed": 2},
            ],
        ),
        snapshot(at="2026-11-23T00:00:00Z", cluster="c2"),
        snapshot(at="2026-11-23T00:00:30Z", cluster="c2", broker_id=7),
    ]
    path = write_lines(tmp_path / "s.jsonl", lines)
    volumes = schemas.volume_rows(ingest.load_snapshots(spark, path).rows)
    spans = forecast.volume_spans(volumes, PipelineConfig(snapshots=path, out="")).spans
    for interval in (1, 60 * decisions.MICROS, 7 * 60 * decisions.MICROS):
        by_rows = decisions.timeline_size(volumes, interval)
        assert decisions.timeline_size_of_volume_spans(spans, interval) == by_rows
        assert by_rows["clusters"] == 2 and by_rows["largest"]["cluster"] == "c1" and by_rows["largest"]["volumes"] == 3


def test_a_clock_reset_to_1970_accepted_by_since_fails_the_job_before_the_timeline_and_writes_no_summary(
    spark, tmp_path
):
    path = write_lines(tmp_path / "s.jsonl", minutes(3) + [snapshot(at="1970-01-01T00:00:00Z")])
    out = tmp_path / "out"
    config = PipelineConfig(snapshots=path, out=str(out), since="1970-01-01T00:00:00Z", report=False, progress=False)
    with pytest.raises(
        job.JobError,
        match=r"^decision timeline: cluster 'c1' would judge 29,\d{3},\d{3} rows "
        r".* spans 1970-01-01T00:00:00Z to 2026-11-22",
    ) as refused:
        job.run(config)
    assert "--since/--until" in str(refused.value) and "--max-timeline-rows" in str(refused.value), "what to narrow"
    assert not (out / "summary.json").exists()
    job.run(PipelineConfig(snapshots=path, out=str(out), report=False, progress=False))  # the default window rejects it
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["rows_read"], summary["rows_used"], summary["rows_rejected"]) == (4, 3, 1)
    # The write of volumes/ found the median on the way with the 1970 record in; its bounds reject that record, so
    # volumes/ was written again without it.
    assert sorted(stamp.year for stamp in pq.read_table(out / "volumes").column("at").to_pylist()) == [2026] * 3
    rejected = [
        json.loads(line)["reason"]
        for name in (out / "rejected" / "input=snapshots").iterdir()
        if name.suffix == ".json"
        for line in name.read_text().splitlines()
    ]
    assert len(rejected) == 1 and rejected[0].startswith("SnapshotAt is more than 366 days before the median")


# -- 2. nothing usable, and file names -------------------------------------------------------------------------------
@pytest.mark.parametrize("content", [b"", b"\n \n", bytes(range(256)) * 8, b'\xff\xfe{not json\x00\n[1, 2]\n"text"\n'])
def test_an_input_with_nothing_usable_is_an_accounted_result(spark, tmp_path, content):
    path = tmp_path / "snapshots.jsonl"
    path.write_bytes(content)
    out = tmp_path / "out"
    summary = job.run(PipelineConfig(snapshots=str(path), out=str(out), min_available_ratio=0.1, progress=False))
    written = json.loads((out / "summary.json").read_text())
    assert written["rows_used"] == 0 and written["rows_read"] == written["rows_rejected"] == summary["rows_read"]
    assert written["stages"]["decisions"]["rows"] == 0 and written["stages"]["forecast"]["volumes"] == 0
    assert len(written["warnings"]) == 1 and written["warnings"][0].startswith("--snapshots: ")
    assert os.path.isfile(out / "report" / "index.html")
    if written["rows_read"]:
        rejected = spark.read.json(str(out / "rejected"))
        assert rejected.count() == written["rows_rejected"]
        assert {row.reason for row in rejected.collect()} == {"not a JSON object in the usage snapshot schema"}


def _awkward_files(directory, suffix, write):
    directory.mkdir()
    paths = {}
    for name in AWKWARD_NAMES:
        path = directory / f"{name}{suffix}"
        write(path, name)
        paths[name] = str(path)
    nested = directory / "x:y[1]"
    nested.mkdir()
    write(nested / f"z:w{suffix}", "nested")
    paths["nested"] = str(nested / f"z:w{suffix}")
    return paths


def test_json_lines_files_are_read_as_the_exact_files_their_names_say(spark, tmp_path):
    paths = _awkward_files(
        tmp_path / "in", ".jsonl", lambda path, name: write_lines(path, [snapshot(cluster=name), "{broken"])
    )
    visible = {name: path for name, path in paths.items() if not name.startswith(("_", "."))}
    result = ingest.load_snapshots(spark, str(tmp_path / "in"))  # a directory: its files but hidden ones
    assert sorted(row.cluster for row in result.rows.collect()) == sorted(visible)
    assert sorted(row.source for row in result.rejected.collect()) == sorted(visible.values())
    for name in (
        "_underscore",
        ".dot",
        "k:l[1]",
        "snap-2026-11-22T04:07:09Z",
        "nested",
    ):  # named one by one, hidden ones too
        result = ingest.load_snapshots(spark, paths[name])
        assert [row.cluster for row in result.rows.collect()] == [name]
        assert [row.source for row in result.rejected.collect()] == [paths[name]]


def test_parquet_files_are_read_as_the_exact_files_their_names_say(spark, tmp_path):
    def write(path, name):
        rows = [
            dict(snapshot(cluster=name), HardLimit=None, SoftLimit=None),
            dict(snapshot(cluster=name, broker_id=-1), HardLimit=None, SoftLimit=None),
        ]
        pq.write_table(pa.Table.from_pylist(rows), str(path))

    paths = _awkward_files(tmp_path / "in", ".parquet", write)
    visible = {name: path for name, path in paths.items() if not name.startswith(("_", "."))}
    result = ingest.load_snapshots(spark, str(tmp_path / "in"))
    assert sorted(row.cluster for row in result.rows.collect()) == sorted(visible)
    assert sorted(row.source for row in result.rejected.collect()) == sorted(visible.values())
    for name in ("_underscore", "k:l[1]", "nested"):
        assert [row.cluster for row in ingest.load_snapshots(spark, paths[name]).rows.collect()] == [name]


def test_a_parquet_suffix_on_a_file_that_is_not_parquet_is_bad_input_named(tmp_path):
    for content in (b"", b'{"SnapshotAt": 1}\n'):
        (tmp_path / "s.parquet").write_bytes(content)
        with pytest.raises(ConfigError, match=r"--snapshots: '.*s\.parquet' is not a Parquet file"):
            sources.resolve_files(str(tmp_path / "s.parquet"), "--snapshots")


# -- 5. the column checks -----------------------------------------------------------------------------------------
def test_the_column_checks_reject_what_kafka_and_module_utils_reject(spark, tmp_path):
    volume = {"VolumeName": "/d", "Capacity": 1000, "Consumed": 10}
    lines = [
        snapshot(broker_id=2**31 - 1),
        snapshot(broker_id=2**31),
        snapshot(broker_id=2**63),
        snapshot(broker_id=1.5),
        snapshot(volumes=[dict(volume, Capacity=1e30)]),
        snapshot(volumes=[dict(volume, Consumed=0.5)]),
        snapshot(volumes=[dict(volume, Consumed=1001)]),
        snapshot(volumes=[volume, dict(volume, Capacity=2000)]),
        # JSON has no NaN or Infinity (Python writes them anyway)
        '{"SnapshotAt": "2026-11-22T04:00:00Z", "BrokerId": 1, "Volumes": [], '
        '"HardLimit": {"type": "MinFreeBytes", "level": Infinity}}',
        '{"SnapshotAt": "2026-11-22T04:00:00Z", "BrokerId": 1, '
        '"Volumes": [{"VolumeName": "/d", "Capacity": NaN, "Consumed": 1}]}',
    ]
    result = ingest.load_snapshots(spark, write_lines(tmp_path / "s.jsonl", lines))
    assert [row.broker_id for row in result.rows.collect()] == [2**31 - 1]
    lacks = "a volume lacks Capacity or Consumed (or they are not whole numbers of bytes)"
    assert reasons_of(result) == sorted(
        [
            "BrokerId must be a broker id, a whole number from 0 to 2147483647",
            "BrokerId is missing (or not a whole number)",
            "BrokerId is missing (or not a whole number)",
            lacks,
            lacks,
            "a volume's Consumed exceeds its Capacity",
            "a VolumeName appears twice",
        ]
        + ["not a JSON object in the usage snapshot schema"] * 2
    )


def test_non_finite_limit_levels_in_parquet_are_rejected(spark, tmp_path):
    rows = [
        dict(snapshot(), HardLimit={"type": "MinFreeBytes", "level": level})
        for level in (100.0, float("inf"), float("-inf"), float("nan"))
    ]
    pq.write_table(pa.Table.from_pylist(rows), str(tmp_path / "s.parquet"))
    result = ingest.load_snapshots(spark, str(tmp_path / "s.parquet"))
    assert result.rows.count() == 1
    assert reasons_of(result) == ["HardLimit.level must be a finite number >= 0"] * 3


# -- 4. secrets --------------------------------------------------------------------------------------------------------
MALFORMED_URLS = [
    f"kafka://broker-1:9092?sasl_password={PASSWORD}",
    f"kafka://broker-1:9092/?security_protocol=SASL_SSL&sasl_password={PASSWORD}",
    f"kafka://broker-1:9092/a/b?ssl_password={PASSWORD}",
    f"kafka://alice:{PASSWORD}@broker-1:9092",
    f"kafka://alice:{PASSWORD}@broker-1:9092/topic",
    f"kafka://[::1/topic?sasl_password={PASSWORD}",
    f"kafka://broker-1/t?sasl_username=alice@example.com&my_api_token={PASSWORD}",
    f"KAFKA://broker-1:9092?Sasl%5FPassword={PASSWORD}",
    f"kafka:/alice:{PASSWORD}@broker-1/topic",
    f"kafka://broker-1/t/sasl_password={PASSWORD}&x",
    f"kafka://broker-1:9092/sasl_password={PASSWORD}",
    f"kafka://broker-1:9092/alice:{PASSWORD}@topic",
]


@pytest.mark.parametrize("url", MALFORMED_URLS)
def test_secrets_in_a_kafka_url_never_reach_a_message(url):
    assert PASSWORD not in sources.mask_location(url) and "********" in sources.mask_location(url)
    for message in (f"--snapshots: {url!r} must look like ...", f"unrecognized arguments: {url} --quiet"):
        assert PASSWORD not in sources.mask_secrets(message), message
    with pytest.raises(ConfigError) as refused:
        job.run(PipelineConfig(snapshots=url, out="unused"))
    assert PASSWORD not in str(refused.value)


def test_masking_keeps_what_is_not_secret():
    url = "kafka://b-1:9092,b-2:9092/__volume_usage?security_protocol=SASL_SSL&sasl_username=alice@example.com&ssl_cafile=/etc/ca.pem"
    assert (
        sources.mask_location(url) == url and sources.mask_secrets(f"read {url!r}: failed") == f"read {url!r}: failed"
    )
    assert (
        sources.mask_location("/data/snapshots/2026-11-22T04:07:09Z.jsonl")
        == "/data/snapshots/2026-11-22T04:07:09Z.jsonl"
    )
    message = (
        "org.apache.spark.SparkException: file:///data/a@b/x.parquet (see https://spark.apache.org/docs/) in Foo@1a2b"
    )
    assert sources.mask_secrets(message) == message
    settings = job._settings(
        PipelineConfig(
            snapshots=f"kafka://alice:{PASSWORD}@b-1:9092/t", out="o", since="2026-11-01T00:00:00+01:00"
        ).validate()
    )
    assert settings["snapshots"] == "kafka://********@b-1:9092/t" and settings["since"] == "2026-10-31T23:00:00Z"


def test_the_command_line_masks_secrets_on_every_stream_and_file(tmp_path):
    out = tmp_path / "out"
    for url in MALFORMED_URLS[:3] + MALFORMED_URLS[5:7]:
        result = run_cli("run", "--snapshots", url, "--out", str(out))
        assert_failed_cleanly(result, 2, "--snapshots: ")
        assert PASSWORD not in result.stderr + result.stdout
    result = run_cli(
        "run", "--snapshots", "s.jsonl", "--out", str(out), f"kafka://h/t?sasl_password={PASSWORD}"
    )  # argparse's error
    assert result.returncode == 2 and "unrecognized arguments" in result.stderr and PASSWORD not in result.stderr
    result = run_cli(
        "run",
        "--snapshots",
        "kafka://127.0.0.1:1/snapshots?request_timeout=1",
        "--out",
        str(out),
        env={"HEADROOM_KAFKA_SASL_PASSWORD": PASSWORD},
    )
    assert_failed_cleanly(result, 1, "cannot read topic 'snapshots'")
    assert PASSWORD not in result.stderr + result.stdout
    written = [os.path.join(root, name) for root, unused_dirs, names in os.walk(tmp_path) for name in names]
    assert all(PASSWORD.encode() not in open(path, "rb").read() for path in written)


# -- 1 and 3, end to end: stdout, exit status, one failure line --------------------------------------------------------
def test_a_run_prints_one_json_line_and_its_warnings_on_stderr(tmp_path):
    """Garbage (nothing usable) is a result, not a failure: one JSON line on stdout and nothing else, even with
    Spark's console progress asked for, and the warning on stderr. One command for both claims: each run of the command
    line is a JVM of its own."""
    directory = tmp_path / "snap:[shots] *"
    directory.mkdir()
    path = directory / "snap-2026-11-22T04:07:09Z.jsonl"
    path.write_bytes(bytes(range(256)) * 16)
    result = run_cli(
        "run",
        "--snapshots",
        str(path),
        "--out",
        str(tmp_path / "out"),
        "--no-report",
        "--conf",
        "spark.ui.showConsoleProgress=true",
    )
    printed = assert_one_json_line(result)
    assert printed["rows_used"] == 0 and printed["rows_read"] == printed["rows_rejected"] > 0
    assert printed["warnings"] and "headroom_pipeline: warning: --snapshots: none of the" in result.stderr
    assert "Traceback" not in result.stderr and "NativeCodeLoader" not in result.stderr
    assert (tmp_path / "out" / "summary.json").is_file()


def test_an_error_inside_spark_ends_in_one_failure_line_and_no_summary(tmp_path):
    """Two Parquet files whose BrokerId columns have different types pass every check before Spark, then fail its
    scan."""
    directory = tmp_path / "snapshots"
    directory.mkdir()
    for name, broker_id in (("a.parquet", 1), ("b.parquet", "one")):
        pq.write_table(
            pa.Table.from_pylist([{"SnapshotAt": "2026-11-22T04:00:00Z", "BrokerId": broker_id}]), str(directory / name)
        )
    out = tmp_path / "out"
    result = run_cli("run", "--snapshots", str(directory), "--out", str(out), "--no-report")
    assert_failed_cleanly(result, 1, "headroom_pipeline: failed: read snapshots: ")
    assert len(result.stderr.strip().splitlines()[-1]) < 800
    assert not (out / "summary.json").exists()


def test_errors_of_spark_become_one_line_naming_the_stage(spark, tmp_path):
    directory = tmp_path / "snapshots"
    directory.mkdir()
    for name, broker_id in (("a.parquet", 1), ("b.parquet", "one")):
        pq.write_table(
            pa.Table.from_pylist([{"SnapshotAt": "2026-11-22T04:00:00Z", "BrokerId": broker_id}]), str(directory / name)
        )
    with pytest.raises(job.JobError, match=r"^read snapshots: .*PARQUET_COLUMN_DATA_TYPE_MISMATCH.*\[BrokerId\]"):
        job.run(PipelineConfig(snapshots=str(directory), out=str(tmp_path / "out"), progress=False))
    py4j_text = (
        "An error occurred while calling o81.parquet.\n: org.apache.spark.SparkException: Job aborted.\n"
        "\tat org.apache.spark.Foo"
    )
    assert job.failure_reason(RuntimeError(py4j_text)) == "org.apache.spark.SparkException: Job aborted."
    assert job.failure_reason(
        RuntimeError(py4j_text + "\nCaused by: java.lang.OutOfMemoryError: Java heap space")
    ).startswith("out of memory (java.lang.OutOfMemoryError): give the driver more with --driver-memory")
    assert job.failure_reason(ConnectionRefusedError(111, "Connection refused")).startswith(
        "lost Spark's JVM (ConnectionRefusedError"
    )
    assert len(job.failure_reason(RuntimeError("x" * 5000))) == job.MAX_REASON + 3


def test_an_output_directory_that_cannot_be_written_is_bad_input(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match="--out: cannot write to"):
        job.run(
            PipelineConfig(snapshots=write_lines(tmp_path / "s.jsonl", minutes(1)), out=str(tmp_path / "file" / "out"))
        )


def test_a_since_outside_the_instant_range_fails_the_command_before_spark(tmp_path):
    """A usage error, before Spark starts. A timeline too large fails the job with what to narrow (the clock reset to
    1970 above), in the one failure line the command ends in for any error inside Spark."""
    path = write_lines(tmp_path / "s.jsonl", minutes(3))
    result = run_cli("run", "--snapshots", path, "--out", str(tmp_path / "out"), "--since", "0001-01-01T00:00:00+23:59")
    assert_failed_cleanly(result, 2, "--since must be between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59Z")
