"""The benchmark's pandas and DuckDB baselines decide and forecast exactly what the Spark stages do.

Checked on the shared vectors (tests/vectors/decision_timeline.json and volume_forecast.json), against the pure
reference (tests/decision_timeline_reference.py) on a small generated fleet, and against the Spark stages on the same
generated Parquet files, read by each engine itself as the benchmark reads them.
"""

import datetime
import math
import os

import decision_timeline_reference as reference
import pytest
import vector_cases
from bench_modules import bench_module

from headroom_pipeline import schemas
from headroom_pipeline.config import PipelineConfig

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
# A small fleet with many events: 4 clusters (one per limit kind) x 6 brokers over 4 hours, frequent gaps, stopping
# brokers and duplicates.
SMALL_FLEET = {
    "brokers_per_cluster": 6,
    "minutes": 240,
    "broker_gaps": 3.0,
    "cluster_gaps": 2.0,
    "stopping_share": 0.1,
    "duplicate_share": 0.02,
}
SMALL_ROWS = 4 * 6 * 240
FORECAST_NUMBERS = (
    "bytes_per_hour",
    "hours_to_hard_limit",
    "hours_to_plugin_limit",
    "hard_limit_usable_bytes",
    "plugin_limit_usable_bytes",
    "usable_ratio",
    "peak_fill_bytes_per_sec",
)


@pytest.fixture(scope="module")
def baselines():
    return bench_module("pipeline_baselines")


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """Snapshot Parquet files of the small fleet, written by the benchmark's generator."""
    bench = bench_module("pipeline_bench")
    return bench.snapshot_data(
        SMALL_ROWS, progress=lambda text: None, directory=str(tmp_path_factory.mktemp("fleet")), **SMALL_FLEET
    )


def micros(value):
    if isinstance(value, str):
        value = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    if value.tzinfo is None:  # Spark hands back naive local times; the session zone is UTC
        value = value.astimezone(datetime.timezone.utc)
    return (value - EPOCH) // datetime.timedelta(microseconds=1)


def settings(**values):
    return PipelineConfig(snapshots="unused", out="unused", **values)


def _numbers_close(got, want):
    if want is None or (isinstance(want, float) and math.isnan(want)):
        return got is None or (isinstance(got, float) and math.isnan(got))
    if got is None or (isinstance(got, float) and math.isnan(got)):
        return False
    return abs(got - want) <= max(1e-6, 1e-9 * abs(want))


# -- the pure input both baselines take -----------------------------------------------------------------------------
def decision_rows(table):
    """Comparable decision rows from any engine's output (a pyarrow table or Spark rows as dicts)."""
    rows = table.to_pylist() if hasattr(table, "to_pylist") else table
    return sorted(
        (
            row["policy"],
            row["cluster"],
            micros(row["at"]),
            row["throttle_factor"],
            row["state"],
            row["fallback_applied"],
            row["observed"],
            [(violation["broker_id"], violation["log_dir"]) for violation in row["violations"]],
            row["volumes_considered"],
            row["brokers_considered"],
        )
        for row in rows
    )


def run_decisions(baselines, rows, config):
    """(pandas rows, DuckDB rows) of the decision timeline for normalized messages."""
    messages, volumes = baselines.pandas_frames(rows)
    from_pandas = decision_rows(baselines.pandas_decision_timeline(messages, volumes, config))
    connection = baselines.duckdb_connect(threads=1)
    baselines.duckdb_load(connection, rows)
    baselines.duckdb_decision_timeline(connection, config)
    from_duckdb = decision_rows(connection.sql("SELECT * FROM decisions").to_arrow_table())
    connection.close()
    return from_pandas, from_duckdb


# -- tests/vectors/decision_timeline.json ---------------------------------------------------------------------------
def _decision_cases():
    return vector_cases.load("decision_timeline.json")["cases"]


@pytest.mark.parametrize("case", _decision_cases(), ids=lambda case: case["id"])
def test_decision_vector(baselines, case):
    params = case["params"]
    config = settings(
        check_interval=params["check_interval"],
        throttle_factor_validity=params.get("validity", 300),
        throttle_factor_fallback=params.get("fallback", 1.0),
        min_available_bytes=params.get("min_available_bytes"),
        min_available_ratio=params.get("min_available_ratio"),
        max_age=params.get("freshness"),
        missing_data_action=params.get("missing_data_action", "pause"),
        throttle_factor_step=params.get("factor_step", 0.05),
    )
    rows = [dict(message, cluster="c1", at=micros(message["at"])) for message in case["messages"]]
    expected = [
        (
            micros(row["at"]),
            row["throttle_factor"],
            row["state"],
            row["fallback_applied"],
            [tuple(item) for item in row["violations"]],
        )
        for row in case["expected"]
    ]
    for engine, result in zip(("pandas", "duckdb"), run_decisions(baselines, rows, config), strict=True):
        got = [
            (at, factor, state, fallback, violations)
            for policy, cluster, at, factor, state, fallback, observed, violations, volumes, brokers in result
            if policy == params["policy"]
        ]
        assert got == expected, engine


# -- tests/vectors/volume_forecast.json -----------------------------------------------------------------------------
def _forecast_cases():
    return vector_cases.load("volume_forecast.json")["cases"]


def _forecast_engines(baselines, rows, config):
    """{engine: {(cluster, broker_id, log_dir): output row}} of both baselines for VOLUMES rows (dicts, at in
    microseconds)."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    frame = pd.DataFrame(
        {
            "cluster": pd.Categorical([row["cluster"] for row in rows]),
            "broker_id": np.array([row["broker_id"] for row in rows], dtype=np.int64),
            "log_dir": pd.Categorical([row["log_dir"] for row in rows]),
            "at": np.array([row["at"] for row in rows], dtype=np.int64),
            "total_bytes": np.array([row["total_bytes"] for row in rows], dtype=np.int64),
            "usable_bytes": np.array([row["usable_bytes"] for row in rows], dtype=np.int64),
            "hard_type": pd.Categorical([row.get("hard_type") for row in rows]),
            "hard_level": np.array([row.get("hard_level") for row in rows], dtype=np.float64),
        }
    )
    from_pandas = pa.Table.from_pandas(
        baselines.pandas_volume_forecast(frame, config), preserve_index=False
    ).to_pylist()
    connection = baselines.duckdb_connect(threads=1)
    given = pa.table(
        {
            "cluster": pa.array([row["cluster"] for row in rows], pa.string()),
            "broker_id": frame["broker_id"],
            "at_us": frame["at"],
            "hard_type": pa.array([row.get("hard_type") for row in rows], pa.string()),
            "hard_level": frame["hard_level"],
            "log_dir": pa.array([row["log_dir"] for row in rows], pa.string()),
            "total_bytes": frame["total_bytes"],
            "usable_bytes": frame["usable_bytes"],
        }
    )
    baselines.duckdb_volume_forecast(connection, config, given)
    from_duckdb = connection.sql("SELECT * FROM forecast").to_arrow_table().to_pylist()
    connection.close()
    return {
        engine: {(row["cluster"], row["broker_id"], row["log_dir"]): row for row in result}
        for engine, result in (("pandas", from_pandas), ("duckdb", from_duckdb))
    }


def _same_forecast_value(got, want):
    if isinstance(want, str) and want.endswith("Z"):
        return got is not None and micros(got) == micros(want)
    if want is None or isinstance(want, float) or isinstance(got, float):
        return _numbers_close(got, want)
    return got == want


@pytest.mark.parametrize("case", _forecast_cases(), ids=lambda case: case["id"])
def test_forecast_vector(baselines, case):
    config = settings(**{key: value for key, value in case["config"].items() if value is not None})
    rows = []
    for given in case["rows"]:
        row = dict(case["row_defaults"], **given)
        rows.append(dict(row, at=micros(row["at"]), usable_bytes=row["total_bytes"] - row["used_bytes"]))
    for engine, result in _forecast_engines(baselines, rows, config).items():
        assert len(result) == len(case["expected"]), engine
        for expected in case["expected"]:
            got = result[(expected["cluster"], expected["broker_id"], expected["log_dir"])]
            wrong = {
                column: (got[column], want)
                for column, want in expected.items()
                if not _same_forecast_value(got[column], want)
            }
            assert not wrong, f"{engine}: {wrong}"


# -- a generated fleet: the pure reference, and Spark on the same Parquet files ---------------------------------------
def _reference_messages(baselines, data):
    """The generated snapshots as the reference's message dicts (normalized by the pandas reader)."""
    messages, volumes = baselines.pandas_read(data)
    by_message = {}
    for volume in volumes.itertuples():
        by_message.setdefault(volume.message, []).append(
            {
                "log_dir": str(volume.log_dir),
                "total_bytes": int(volume.total_bytes),
                "usable_bytes": int(volume.usable_bytes),
            }
        )

    def limit(limit_type, level):
        return None if not isinstance(limit_type, str) else {"type": limit_type, "level": float(level)}

    return [
        {
            "cluster": str(row.cluster),
            "broker_id": int(row.broker_id),
            "at": EPOCH + datetime.timedelta(microseconds=int(row.at)),
            "soft_limit": limit(row.soft_type, row.soft_level),
            "hard_limit": limit(row.hard_type, row.hard_level),
            "volumes": by_message.get(index, []),
        }
        for index, row in enumerate(messages.itertuples())
    ]


CONFIGS = {
    "bench settings": {"min_available_ratio": 0.1},
    "slow checks, short validity, open": {
        "check_interval": 120,
        "throttle_factor_validity": 90,
        "throttle_factor_fallback": 0.0,
        "min_available_ratio": 0.15,
        "max_age": 250,
        "missing_data_action": "open",
    },
    "bytes limit, half fallback": {
        "check_interval": 45,
        "throttle_factor_validity": 200,
        "throttle_factor_fallback": 0.5,
        "min_available_bytes": 30 * 1024**3,
        "max_age": 100,
    },
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_baselines_match_the_reference_on_a_generated_fleet(baselines, generated, name):
    config = settings(**CONFIGS[name])
    messages = _reference_messages(baselines, generated)
    expected = []
    for policy in ("strimzi", "graded"):
        expected += reference.decision_timeline(
            messages,
            policy,
            config.check_interval,
            validity=config.throttle_factor_validity,
            fallback=config.throttle_factor_fallback,
            min_available_bytes=config.min_available_bytes,
            min_available_ratio=config.min_available_ratio,
            freshness=config.freshness,
            missing_data_action=config.missing_data_action,
            factor_step=config.throttle_factor_step,
        )
    expected = decision_rows(
        [
            dict(row, violations=[{"broker_id": broker, "log_dir": log_dir} for broker, log_dir in row["violations"]])
            for row in expected
        ]
    )
    states = {(row[0], row[4], row[5]) for row in expected}
    assert {("strimzi", "PAUSE", False), ("graded", "THROTTLE", False)} <= states, "the fleet must exercise throttling"
    rows = [dict(message, at=micros(message["at"])) for message in messages]
    from_pandas, from_duckdb = run_decisions(baselines, rows, config)
    assert from_pandas == expected
    assert from_duckdb == expected


def test_baselines_match_spark_on_the_same_parquet_files(spark, baselines, generated, tmp_path):
    import pyarrow.parquet as pq

    from headroom_pipeline import decisions, forecast, ingest
    from headroom_pipeline.session import timeline_settings

    config = settings(**CONFIGS["bench settings"])
    loaded = ingest.load_snapshots(spark, generated)
    assert loaded.read == SMALL_ROWS and loaded.rejected.count() == 0
    messages = loaded.rows.cache()
    with timeline_settings(spark):  # as the job runs it
        spark_decisions = decision_rows(
            [row.asDict(recursive=True) for row in decisions.decision_timeline(messages, config).collect()]
        )
    spark_forecast = {
        (row.cluster, row.broker_id, row.log_dir): row.asDict()
        for row in forecast.volume_forecast(schemas.volume_rows(messages), config).collect()
    }
    messages.unpersist()

    for engine, run in (("pandas", baselines.pandas_run), ("duckdb", baselines.duckdb_run)):
        out = tmp_path / engine
        counts, phases = run(generated, str(out), config)
        assert set(phases) == {"read", "decision timeline", "forecast"}
        assert counts == {"decisions": len(spark_decisions), "forecast": len(spark_forecast)}
        assert decision_rows(pq.read_table(out / "decisions.parquet")) == spark_decisions, engine
        written = {
            (row["cluster"], row["broker_id"], row["log_dir"]): row
            for row in pq.read_table(out / "forecast.parquet").to_pylist()
        }
        assert written.keys() == spark_forecast.keys()
        for key, want in spark_forecast.items():
            got = written[key]
            for column in (
                "samples",
                "buckets",
                "total_bytes",
                "usable_bytes",
                "used_bytes",
                "hard_limit_type",
                "hard_limit_level",
                "recommended_limit_bytes",
                "plugin_limit_covers_peak",
                "hard_limit_covers_peak",
                "rank",
            ):
                assert got[column] == want[column], (engine, key, column)
            for column in FORECAST_NUMBERS:
                assert _numbers_close(got[column], want[column]), (engine, key, column, got[column], want[column])
            for column in ("first_at", "last_at", "crosses_hard_limit_at", "crosses_plugin_limit_at"):
                assert (got[column] is None) == (want[column] is None), (engine, key, column)
                if want[column] is not None:
                    # the slope's last bits (sums in another order) move a crossing far ahead by a few microseconds
                    horizon = abs(micros(want[column]) - micros(want["last_at"]))
                    assert abs(micros(got[column]) - micros(want[column])) <= 1 + 1e-9 * horizon, (engine, key, column)
    assert any(row["crosses_hard_limit_at"] is not None for row in spark_forecast.values()), (
        "some volume must be forecast to cross"
    )


# -- the generator ---------------------------------------------------------------------------------------------------
def test_generator_writes_exact_rows_in_the_snapshot_schema_and_reuses_them(generated):
    import pyarrow.dataset as ds

    from headroom_pipeline import schemas

    bench = bench_module("pipeline_bench")
    table = ds.dataset(generated, format="parquet").to_table()
    assert table.num_rows == SMALL_ROWS
    assert table.column_names == schemas.SNAPSHOT.fieldNames()
    assert str(table.schema.field("SnapshotAt").type) == "timestamp[us, tz=UTC]"
    assert {len(volumes) for volumes in table["Volumes"].to_pylist()} == {1}
    files = sorted(os.listdir(generated))
    stamps = {name: os.stat(os.path.join(generated, name)).st_mtime_ns for name in files}
    assert bench.snapshot_data(SMALL_ROWS, progress=pytest.fail, directory=generated, **SMALL_FLEET) == generated, (
        "same parameters: reused"
    )
    assert {name: os.stat(os.path.join(generated, name)).st_mtime_ns for name in files} == stamps
