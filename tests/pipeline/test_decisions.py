"""The Spark decision timeline: both shared vector files, row-for-row equality with the pure implementation, and the
timeline resumed after a checkpoint (an incremental run) against the whole history's rows."""

import contextlib
import datetime
import json
import random

import decision_timeline_reference as reference
import pytest
import vector_cases
from pyspark.sql import Observation
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ansible_collections.headroom.kafka.plugins.module_utils import factor_steps
from ansible_collections.headroom.kafka.plugins.module_utils.snapshots import parse_timestamp
from headroom_pipeline import decisions, schemas, session
from headroom_pipeline.config import PipelineConfig

UTC = datetime.timezone.utc
START = datetime.datetime(2026, 11, 20, tzinfo=UTC)
FIVE_MINUTES = datetime.timedelta(minutes=5)
TOLERANCE = 1e-9
# MESSAGES with sizes that may be null, as the vectors have them (ingest never lets a null size through).
NULLABLE_VOLUME = T.StructType(
    [
        T.StructField("log_dir", T.StringType()),
        T.StructField("total_bytes", T.LongType()),
        T.StructField("usable_bytes", T.LongType()),
    ]
)
VECTOR_MESSAGES = T.StructType(
    [f for f in schemas.MESSAGES.fields if f.name != "volumes"]
    + [T.StructField("volumes", T.ArrayType(NULLABLE_VOLUME))]
)
VOLUME_ROWS = T.StructType(
    [
        T.StructField("cluster", T.StringType()),
        T.StructField("at", T.LongType()),
        T.StructField("broker_id", T.LongType()),
        T.StructField("log_dir", T.StringType()),
        T.StructField("total_bytes", T.LongType()),
        T.StructField("usable_bytes", T.LongType()),
        T.StructField("soft_type", T.StringType()),
        T.StructField("soft_level", T.DoubleType()),
        T.StructField("hard_type", T.StringType()),
        T.StructField("hard_level", T.DoubleType()),
        T.StructField("min_available_bytes", T.LongType()),
        T.StructField("min_available_ratio", T.DoubleType()),
        T.StructField("complete", T.BooleanType()),
        T.StructField("missing_data_action", T.StringType()),
    ]
)


def _load(name):
    return vector_cases.load(name)["cases"]


LIMIT_CASES = _load("volume_limits.json")
TIMELINE_CASES = _load("decision_timeline.json")


def _pairs(violations):
    return [[item["broker_id"], item["log_dir"]] for item in violations]


def _level(limit):
    return float(limit["level"]) if limit else None


def _message_row(message, cluster):
    """A MESSAGES row from a message dict of the pure implementation's form."""
    soft, hard = message.get("soft_limit"), message.get("hard_limit")
    at = message["at"] if isinstance(message["at"], datetime.datetime) else parse_timestamp(message["at"])
    return (
        cluster,
        message["broker_id"],
        at,
        soft["type"] if soft else None,
        _level(soft),
        hard["type"] if hard else None,
        _level(hard),
        [(v["log_dir"], v["total_bytes"], v["usable_bytes"]) for v in message["volumes"]],
    )


def _config(params):
    return PipelineConfig(
        snapshots="unused",
        out="unused",
        check_interval=params["check_interval"],
        throttle_factor_validity=params.get("validity", 300),
        throttle_factor_fallback=params.get("fallback", 1.0),
        min_available_bytes=params.get("min_available_bytes"),
        min_available_ratio=params.get("min_available_ratio"),
        max_age=params.get("freshness"),
        missing_data_action=params.get("missing_data_action", "pause"),
        throttle_factor_step=params.get("factor_step", factor_steps.DEFAULT_STEP),
    )


def _collect_timeline(frame, settings=None):
    """Timeline rows as dicts, ``at`` as microseconds since the epoch, ordered by policy, cluster and at; the query
    runs under the timeline's settings, as the job runs it, or under ``settings`` alone."""
    applied = session.timeline_settings(frame.sparkSession) if settings is None else contextlib.nullcontext()
    with applied:
        rows = frame.withColumn("at", F.unix_micros("at")).collect()
    return sorted(
        (row.asDict(recursive=True) for row in rows), key=lambda row: (row["policy"], row["cluster"], row["at"])
    )


# -- tests/vectors/volume_limits.json, one instant per case --------------------------------------------------------
def _limit_case_rows(case):
    params = case["params"]
    soft, hard = params.get("soft_limit"), params.get("hard_limit")
    common = {
        "cluster": case["id"],
        "at": 0,
        "soft_type": soft and soft["type"],
        "soft_level": _level(soft),
        "hard_type": hard and hard["type"],
        "hard_level": _level(hard),
        "min_available_bytes": params.get("min_available_bytes"),
        "min_available_ratio": params.get("min_available_ratio"),
        "complete": params.get("complete", True),
        "missing_data_action": params.get("missing_data_action", "pause"),
    }
    # A case without volumes still needs a row to form its group: a broker-less, volume-less placeholder.
    volumes = case["volumes"] or [{"broker_id": None, "log_dir": None, "total_bytes": None, "usable_bytes": None}]
    return [tuple(dict(common, **volume).get(field.name) for field in VOLUME_ROWS.fields) for volume in volumes]


@pytest.fixture(scope="module")
def limit_results(spark):
    rows = [row for case in LIMIT_CASES for row in _limit_case_rows(case)]
    frame = spark.createDataFrame(rows, VOLUME_ROWS)
    strimzi = decisions.decide_instants(
        frame.where(F.col("soft_type").isNull()), "strimzi", F.col("min_available_bytes"), F.col("min_available_ratio")
    )
    decided = decisions.decide_instants(
        frame.where(F.col("soft_type").isNotNull()), "graded", keys=("cluster", "at", "complete", "missing_data_action")
    )
    graded = [
        decisions.apply_missing_data(decided.where(F.col("missing_data_action") == action), F.col("complete"), action)
        for action in ("pause", "open")
    ]
    columns = ["cluster", "throttle_factor", "violations", "least_headroom"]
    combined = strimzi.select(*columns)
    for part in graded:
        combined = combined.unionByName(part.select(*columns))
    combined = combined.withColumn("state", decisions.state_of(F.col("throttle_factor")))
    return {row["cluster"]: row.asDict(recursive=True) for row in combined.collect()}


@pytest.mark.parametrize("case", LIMIT_CASES, ids=[case["id"] for case in LIMIT_CASES])
def test_volume_limit_vector(limit_results, case):
    result, expected = limit_results[case["id"]], case["expected"]
    assert result["throttle_factor"] == pytest.approx(expected["throttle_factor"], abs=TOLERANCE)
    assert result["state"] == expected["state"]
    assert _pairs(result["violations"]) == expected["violations"]
    least = result["least_headroom"]
    assert ([least["broker_id"], least["log_dir"]] if least else None) == expected["least_headroom"]


# -- tests/vectors/decision_timeline.json --------------------------------------------------------------------------
def _timeline_cases_by_parameters():
    """The decision timeline cases in groups of the same parameters: a group runs in one Spark job."""
    groups = {}
    for case in TIMELINE_CASES:
        groups.setdefault(json.dumps(case["params"], sort_keys=True), []).append(case)
    return list(groups.values())


@pytest.fixture(scope="module")
def timeline_results(spark):
    """Every case's rows; cases with the same parameters share one Spark job (one cluster per case)."""
    results = {}
    for cases in _timeline_cases_by_parameters():
        params = cases[0]["params"]
        rows = [_message_row(message, case["id"]) for case in cases for message in case["messages"]]
        frame = decisions.decision_timeline(
            spark.createDataFrame(rows, VECTOR_MESSAGES), _config(params), policies=[params["policy"]]
        )
        for row in _collect_timeline(frame):
            results.setdefault(row["cluster"], []).append(row)
    return results


@pytest.mark.parametrize("case", TIMELINE_CASES, ids=[case["id"] for case in TIMELINE_CASES])
def test_timeline_vector(timeline_results, case):
    rows, expected = timeline_results[case["id"]], case["expected"]
    assert [row["at"] for row in rows] == [reference.to_micros(parse_timestamp(row["at"])) for row in expected]
    for row, wanted in zip(rows, expected, strict=True):
        assert row["throttle_factor"] == pytest.approx(wanted["throttle_factor"], abs=TOLERANCE), row["at"]
        assert (row["state"], row["fallback_applied"], _pairs(row["violations"])) == (
            wanted["state"],
            wanted["fallback_applied"],
            wanted["violations"],
        ), row["at"]


def test_timeline_schema(spark):
    frame = decisions.decision_timeline(
        spark.createDataFrame([], schemas.MESSAGES), _config({"check_interval": 60, "min_available_ratio": 0.1})
    )
    types = {field.name: field.dataType for field in frame.schema.fields}
    assert list(types) == decisions.TIMELINE_COLUMNS
    assert types["at"] == T.TimestampType() and types["throttle_factor"] == T.DoubleType()
    assert types["fallback_applied"] == T.BooleanType() and types["observed"] == T.BooleanType()
    assert types["violations"] == T.ArrayType(
        T.StructType([T.StructField("broker_id", T.LongType()), T.StructField("log_dir", T.StringType())]), False
    )
    assert types["volumes_considered"] == T.IntegerType() and types["brokers_considered"] == T.IntegerType()
    assert frame.count() == 0


def test_without_plugin_limits_only_graded(spark):
    case = next(case for case in TIMELINE_CASES if case["id"] == "graded-per-broker-limits")
    messages = spark.createDataFrame([_message_row(message, "c1") for message in case["messages"]], VECTOR_MESSAGES)
    rows = _collect_timeline(decisions.decision_timeline(messages, _config({"check_interval": 60})))
    assert [
        (row["policy"], row["state"], row["observed"], row["volumes_considered"], row["brokers_considered"])
        for row in rows
    ] == [("graded", "THROTTLE", True, 3, 3)]
    with pytest.raises(ValueError, match="policies must be graded and/or strimzi"):
        decisions.decision_timeline(messages, _config({"check_interval": 60}), policies=["soft"])
    with pytest.raises(ValueError, match="one of min_available_bytes or min_available_ratio is required"):
        decisions.decision_timeline(messages, _config({"check_interval": 60}), policies=["strimzi"])


# -- a generated history: Spark equals the pure implementation row for row ------------------------------------------
LIMITS = [
    ({"type": "min_free_percentage", "level": 20}, {"type": "min_free_percentage", "level": 8}),
    ({"type": "min_free_bytes", "level": 300}, {"type": "min_free_bytes", "level": 120}),
    ({"type": "consumed_space", "level": 820}, {"type": "consumed_space", "level": 930}),
    (None, None),  # no limits: skipped
    ({"type": "min_free_bytes", "level": 100}, {"type": "min_free_bytes", "level": 300}),  # soft after hard: skipped
]


def _history(seed=5, clusters=3, brokers=4, minutes=240):
    """Messages that visit every rule: jitter, late and missing reports, silences, an outage, duplicates, odd sizes
    and limits."""
    rng = random.Random(seed)
    messages = []
    for cluster_index in range(clusters):
        cluster = f"cluster-{cluster_index + 1}"
        outage = range(60 + 20 * cluster_index, 68 + 20 * cluster_index)  # the whole cluster is silent
        for broker in range(1, brokers + 1):
            silence_start = rng.randint(20, 150)
            silent = range(silence_start, silence_start + rng.randint(2, 12)) if rng.random() < 0.5 else range(0)
            joins = rng.choice([0, 0, 0, 30])  # some brokers appear later
            usable = {f"/data/{index}": rng.randint(150, 700) for index in range(rng.randint(1, 3))}
            limits = rng.choice(LIMITS[:3])
            for minute in range(joins, minutes):
                if minute in outage or minute in silent or rng.random() < 0.04:
                    continue
                for log_dir in usable:
                    usable[log_dir] = min(1000, max(0, usable[log_dir] + rng.randint(-25, 25)))
                if rng.random() < 0.05:
                    limits = rng.choice(LIMITS)
                volumes = [
                    {"log_dir": log_dir, "total_bytes": 1000, "usable_bytes": size} for log_dir, size in usable.items()
                ]
                if rng.random() < 0.03:
                    volumes.append({"log_dir": "/data/offline", "total_bytes": -1, "usable_bytes": -1})
                if rng.random() < 0.02:
                    volumes = (
                        [{"log_dir": "/data/empty", "total_bytes": 0, "usable_bytes": 0}] if rng.random() < 0.5 else []
                    )
                at = START + datetime.timedelta(minutes=minute, microseconds=rng.randint(0, 59_999_999))
                message = {
                    "cluster": cluster,
                    "broker_id": broker,
                    "at": at,
                    "soft_limit": limits[0],
                    "hard_limit": limits[1],
                    "volumes": volumes,
                }
                messages.append(message)
                if rng.random() < 0.04:  # a duplicate for the same instant of observation
                    messages.append(
                        dict(
                            message,
                            volumes=[
                                dict(v, usable_bytes=min(1000, max(0, v["usable_bytes"] + rng.randint(-30, 30))))
                                if v["usable_bytes"] >= 0
                                else v
                                for v in volumes
                            ],
                        )
                    )
                if rng.random() < 0.04:  # a second report within the same check interval
                    messages.append(
                        dict(
                            message,
                            at=at + datetime.timedelta(seconds=rng.uniform(0.001, 30)),
                            volumes=[
                                dict(v, usable_bytes=max(0, v["usable_bytes"] - 40)) if v["usable_bytes"] >= 0 else v
                                for v in volumes
                            ],
                        )
                    )
    return messages


def _assert_matches_the_pure_implementation(frame, messages, params, settings=None):
    """The timeline of ``frame`` (the MESSAGES rows of ``messages``) equals the pure implementation's, row for row;
    returns the expected rows. ``settings``: the Spark settings the query runs under instead of the timeline's."""
    spark_rows = _collect_timeline(decisions.decision_timeline(frame, _config(params)), settings)
    arguments = {
        key: value for key, value in params.items() if key not in ("min_available_bytes", "min_available_ratio")
    }
    limits = {key: params[key] for key in ("min_available_bytes", "min_available_ratio") if key in params}
    expected = reference.decision_timeline(messages, "graded", **arguments) + reference.decision_timeline(
        messages, "strimzi", **arguments, **limits
    )
    expected = sorted(
        (dict(row, at=reference.to_micros(row["at"])) for row in expected),
        key=lambda row: (row["policy"], row["cluster"], row["at"]),
    )
    assert len(spark_rows) == len(expected)
    for got, wanted in zip(spark_rows, expected, strict=True):
        assert got["throttle_factor"] == pytest.approx(wanted["throttle_factor"], abs=TOLERANCE), wanted
        assert dict(got, violations=_pairs(got["violations"]), throttle_factor=None) == dict(
            wanted, throttle_factor=None
        )
    return expected


def _duplicated_history():
    """One broker whose first, middle and last times each carry three messages, the one the rules keep (least total
    usable bytes) first, in the middle and last of them, beside a broker with one message a minute and one whose
    duplicates differ in sizes that contradict each other."""
    limits = {"soft_limit": LIMITS[0][0], "hard_limit": LIMITS[0][1]}

    def message(broker, minute, usable, second=30, total=1000):
        at = START + datetime.timedelta(minutes=minute, seconds=second)
        volumes = [{"log_dir": "/data/0", "total_bytes": total, "usable_bytes": usable}]
        return {"cluster": "c", "broker_id": broker, "at": at, "volumes": volumes, **limits}

    steady = [message(2, minute, 500) for minute in range(6)]
    duplicated = (
        [message(1, 0, usable) for usable in (400, 60, 150)]  # kept: the middle one
        + [message(1, 1, 300)]
        + [message(1, 3, usable) for usable in (100, 700, 800)]  # kept: the first
        + [message(1, 5, usable) for usable in (900, 950, 70)]  # kept: the last, the broker's last message
    )
    # Sizes that contradict each other (usable above total) count as unknown: no usable bytes, so that one is kept.
    contradictory = [message(3, 2, 200, total=100), message(3, 2, 50), message(3, 4, 500)]
    return steady + duplicated + contradictory


DUPLICATED_PARAMS = {"check_interval": 60, "validity": 150, "min_available_ratio": 0.1, "freshness": 150}


def _duplicated_frame(spark, messages, order):
    """The MESSAGES rows of ``messages`` in one partition, in the given order (the order they reach the shuffle)."""
    rows = [_message_row(message, message["cluster"]) for message in messages]
    if order == "reversed":
        rows.reverse()
    elif order == "shuffled":
        random.Random(7).shuffle(rows)
    return spark.createDataFrame(rows, schemas.MESSAGES).coalesce(1)


@pytest.mark.parametrize("order", ["as-listed", "reversed", "shuffled"])
def test_duplicates_anywhere_in_a_brokers_history_keep_the_message_the_rules_prefer(spark, order):
    messages = _duplicated_history()
    frame = _duplicated_frame(spark, messages, order)
    expected = _assert_matches_the_pure_implementation(frame, messages, DUPLICATED_PARAMS)
    # Only the kept messages trip the ratio limit, so the instants after each duplicated time show which was kept.
    violated = {row["at"] for row in expected if row["policy"] == "strimzi" and row["violations"]}
    kept_at = {reference.to_micros(START + datetime.timedelta(minutes=minute)) for minute in (1, 4, 6)}
    assert kept_at <= violated


# Plans that differ in every way that could reorder the messages of one time: one, a few and many shuffle partitions,
# adaptive execution on and off (it coalesces and splits partitions), and the windows' own shuffle by broker.
PLANS = {
    "one-partition-no-aqe": {"spark.sql.shuffle.partitions": "1", "spark.sql.adaptive.enabled": "false"},
    "3-partitions-aqe": {"spark.sql.shuffle.partitions": "3", "spark.sql.adaptive.enabled": "true"},
    "17-partitions-no-aqe-reshuffled-by-broker": {
        "spark.sql.shuffle.partitions": "17",
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.requireAllClusterKeysForDistribution": "true",
    },
    "200-partitions-aqe-reshuffled-by-broker": {
        "spark.sql.shuffle.partitions": "200",
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.requireAllClusterKeysForDistribution": "true",
    },
}


@pytest.mark.parametrize("plan", sorted(PLANS))
def test_duplicates_are_settled_by_the_data_whatever_the_plan(spark, plan):
    """The timeline's rows do not depend on the query's plan: run without the timeline's own settings, under plans
    that shuffle and sort the messages differently, over input whose duplicates sit in different partitions in a
    random order, the kept message is always the one the rules prefer (the same job on a standalone cluster:
    test_spark_cluster.py)."""
    messages = _duplicated_history() + _history(seed=11, clusters=2, brokers=3, minutes=90)
    rows = [_message_row(message, message["cluster"]) for message in messages]
    random.Random(plan).shuffle(rows)
    frame = spark.createDataFrame(rows, schemas.MESSAGES).repartition(7, F.rand(seed=3))
    with session.settings_applied(spark, PLANS[plan]):
        _assert_matches_the_pure_implementation(frame, messages, DUPLICATED_PARAMS, settings=PLANS[plan])


# The generated history's parameters: a plugin limit as a ratio with the pause, and in bytes with open.
GENERATED_PARAMS = [
    {
        "check_interval": 60,
        "validity": 300,
        "fallback": 0.5,
        "min_available_ratio": 0.12,
        "freshness": 150,
        "missing_data_action": "pause",
    },
    {
        "check_interval": 45,
        "validity": 200,
        "fallback": 0.0,
        "min_available_bytes": 110,
        "freshness": 100,
        "missing_data_action": "open",
    },
]
GENERATED_IDS = ["ratio-pause", "bytes-open"]


@pytest.mark.parametrize("params", GENERATED_PARAMS, ids=GENERATED_IDS)
def test_generated_history_matches_the_pure_implementation(spark, params):
    messages = _history()
    assert len(messages) > 2000
    frame = spark.createDataFrame([_message_row(message, message["cluster"]) for message in messages], schemas.MESSAGES)
    expected = _assert_matches_the_pure_implementation(frame, messages, params)
    # The history must reach every branch of the rules, or the equality above proves little.
    strimzi = {
        (row["state"], row["fallback_applied"], row["observed"]) for row in expected if row["policy"] == "strimzi"
    }
    graded = {(row["state"], row["fallback_applied"], row["observed"]) for row in expected if row["policy"] == "graded"}
    assert {("OPEN", False, True), ("PAUSE", False, True)} <= strimzi
    assert any(not fallback and not observed for state, fallback, observed in strimzi), (
        "a failed check keeping the last factor"
    )
    assert any(fallback and not observed for state, fallback, observed in strimzi), "a failed check past the validity"
    assert {("OPEN", False, True), ("THROTTLE", False, True), ("PAUSE", False, True)} <= graded
    assert any(fallback or not observed for state, fallback, observed in graded), "stale brokers"


# -- resumed after a checkpoint (decision_timeline's seeds): every vector case after each of its instants --------------
SEEDS = T.StructType(
    [T.StructField("cluster", T.StringType())]
    + [
        T.StructField(name, T.LongType() if kind == "long" else T.DoubleType())
        for name, kind in decisions.SEED_COLUMNS.items()
    ]
)
COMPARED = (
    "at",
    "throttle_factor",
    "state",
    "fallback_applied",
    "observed",
    "volumes_considered",
    "brokers_considered",
)


def _splits(case):
    """(cluster name, instant, the case's messages in that cluster) for each instant of its timeline but the last."""
    for row in case["expected"][:-1]:
        instant = reference.to_micros(parse_timestamp(row["at"]))
        cluster = f"{case['id']}@{instant}"
        yield cluster, instant, [dict(m, cluster=cluster, at=parse_timestamp(m["at"])) for m in case["messages"]]


def _fed(checkpoint, later):
    """The messages a resumed timeline reads: each broker's latest at the checkpoint (a broker known only by it
    without volumes or limits), then those after it."""
    latest = [
        dict(message, at=reference.from_micros(message["at_micros"]))
        for unused_broker, message in sorted(checkpoint.latest.items())
    ]
    return latest + later


@pytest.fixture(scope="module")
def resumed(spark):
    """{cluster: (Spark's rows, the pure implementation's rows of the whole history after the instant)}."""
    results = {}
    for cases in _timeline_cases_by_parameters():
        params = cases[0]["params"]
        fed, seeds, expected = [], [], {}
        for case in cases:
            for cluster, instant, messages in _splits(case):
                checkpoint = reference.checkpoints(messages, instant, **params)[cluster]
                later = [message for message in messages if reference.to_micros(message["at"]) > instant]
                fed += [_message_row(message, cluster) for message in _fed(checkpoint, later)]
                held = checkpoint.held if params["policy"] == "graded" else None
                seeds.append((cluster, instant, checkpoint.valid_from, float(checkpoint.factor), held))
                whole = reference.decision_timeline(messages, **params)
                expected[cluster] = [
                    dict(row, at=reference.to_micros(row["at"]))
                    for row in whole
                    if reference.to_micros(row["at"]) > instant
                ]
        frame = decisions.decision_timeline(
            spark.createDataFrame(fed, VECTOR_MESSAGES),
            _config(params),
            policies=[params["policy"]],
            seeds=spark.createDataFrame(seeds, SEEDS),
        )
        rows = {}
        for row in _collect_timeline(frame):
            rows.setdefault(row["cluster"], []).append(row)
        for cluster, wanted in expected.items():
            results[cluster] = (rows.get(cluster, []), wanted)
    return results


# The cases with an instant to resume after (one row: nothing follows its instant).
RESUMABLE_CASES = [case for case in TIMELINE_CASES if len(case["expected"]) > 1]


@pytest.mark.parametrize("case", RESUMABLE_CASES, ids=[case["id"] for case in RESUMABLE_CASES])
def test_a_timeline_resumed_after_any_instant_gives_the_whole_historys_rows(resumed, case):
    for split in _splits(case):
        cluster = split[0]
        got, wanted = resumed[cluster]
        assert [row["at"] for row in got] == [row["at"] for row in wanted], cluster
        for row, want in zip(got, wanted, strict=True):
            assert row["throttle_factor"] == pytest.approx(want["throttle_factor"], abs=TOLERANCE), (cluster, want)
            assert {key: row[key] for key in COMPARED if key != "throttle_factor"} == {
                key: want[key] for key in COMPARED if key != "throttle_factor"
            }, (cluster, want)
            assert _pairs(row["violations"]) == want["violations"], (cluster, want)


@pytest.mark.parametrize("params", GENERATED_PARAMS, ids=GENERATED_IDS)
def test_a_generated_history_resumed_gives_both_policies_rows_of_the_whole_history(spark, params):
    """Both policies in one timeline, as the job runs them, three clusters (an outage, silences, brokers that join
    later, duplicates), each resumed after several instants (its first, one before some brokers joined, one in an
    outage)."""
    split_minutes = (1, 40, 64, 131, 200)
    limits = {key: params[key] for key in ("min_available_bytes", "min_available_ratio") if key in params}
    arguments = {key: value for key, value in params.items() if key not in limits}
    history = _history()
    interval = reference.duration_micros(params["check_interval"])
    fed, seeds, expected = [], [], []
    for minute in split_minutes:
        instant = reference.instant_on_or_after(reference.to_micros(START) + minute * 60_000_000, interval)
        messages = [dict(message, cluster=f"{message['cluster']}@{minute}") for message in history]
        graded = reference.checkpoints(messages, instant, "graded", **arguments)
        strimzi = reference.checkpoints(messages, instant, "strimzi", **arguments, **limits)
        assert graded.keys() == strimzi.keys()
        for cluster, checkpoint in graded.items():
            seeds.append(
                (cluster, instant, strimzi[cluster].valid_from, float(strimzi[cluster].factor), checkpoint.held)
            )
            fed += [_message_row(message, cluster) for message in _fed(checkpoint, [])]
        fed += [
            _message_row(message, message["cluster"])
            for message in messages
            if message["cluster"] not in graded or reference.to_micros(message["at"]) > instant
        ]
        whole = reference.decision_timeline(messages, "graded", **arguments) + reference.decision_timeline(
            messages, "strimzi", **arguments, **limits
        )
        expected += [
            dict(row, at=reference.to_micros(row["at"]))
            for row in whole
            if row["cluster"] not in graded or reference.to_micros(row["at"]) > instant
        ]
    assert len(seeds) == 3 * len(split_minutes)
    frame = decisions.decision_timeline(
        spark.createDataFrame(fed, schemas.MESSAGES), _config(params), seeds=spark.createDataFrame(seeds, SEEDS)
    )
    got = _collect_timeline(frame)
    expected.sort(key=lambda row: (row["policy"], row["cluster"], row["at"]))
    assert len(got) == len(expected)
    for row, want in zip(got, expected, strict=True):
        assert row["throttle_factor"] == pytest.approx(want["throttle_factor"], abs=TOLERANCE), want
        assert dict(row, violations=_pairs(row["violations"]), throttle_factor=None) == dict(want, throttle_factor=None)


@pytest.mark.parametrize("params", GENERATED_PARAMS, ids=GENERATED_IDS)
def test_a_timeline_resumed_from_the_outputs_of_the_run_before_completes_it(spark, params):
    """What an incremental run does: the run before wrote the timeline and the volume rows of the history up to an
    instant; the next resumes from seeds_of that timeline with checkpoint_rows of those volume rows and the messages
    after. The run before's rows and the resumed rows are together the whole history's, row for row. Beside the
    generated clusters: a cluster that first reports after every cut (never seeded), and a broker that left long
    before the later cuts (its last message moved up to the horizon, still known)."""
    history = _history()
    late_cluster = [
        dict(message, cluster="cluster-late")
        for message in history
        if message["cluster"] == "cluster-1" and message["at"] > START + datetime.timedelta(minutes=150)
    ]
    departed = [
        dict(message, broker_id=9)
        for message in history
        if message["cluster"] == "cluster-2" and message["broker_id"] == 1 and message["at"] < START + FIVE_MINUTES
    ]
    _assert_resumed_from_outputs(spark, history + late_cluster + departed, _config(params), (1, 64, 131))


def test_rival_messages_at_a_brokers_latest_time_are_settled_as_in_the_whole_history(spark):
    """Cut at 4:00, broker 1's latest time (3:30) carries three messages and broker 3's (2:30) two that contradict
    each other: the resumed timeline keeps the ones the whole history keeps."""
    _assert_resumed_from_outputs(spark, _duplicated_history(), _config(DUPLICATED_PARAMS), (4,))


def _assert_resumed_from_outputs(spark, history, config, cut_minutes):
    interval = reference.duration_micros(config.check_interval)
    whole = _collect_timeline(
        decisions.decision_timeline(
            spark.createDataFrame([_message_row(m, m["cluster"]) for m in history], schemas.MESSAGES), config
        )
    )
    for minute in cut_minutes:
        cut = reference.instant_on_or_after(reference.to_micros(START) + minute * 60_000_000, interval)
        before = [m for m in history if reference.to_micros(m["at"]) <= cut]
        after = [m for m in history if reference.to_micros(m["at"]) > cut]
        before_rows = schemas.volume_rows(
            spark.createDataFrame([_message_row(m, m["cluster"]) for m in before], schemas.MESSAGES)
        ).cache()
        earlier_counts, resumed_counts = Observation("earlier"), Observation("resumed")
        earlier = decisions.decision_timeline(before_rows, config, observation=earlier_counts).cache()
        seeds = decisions.seeds_of(earlier).cache()
        after_rows = schemas.volume_rows(
            spark.createDataFrame([_message_row(m, m["cluster"]) for m in after], schemas.MESSAGES)
        )
        fed = decisions.checkpoint_rows(before_rows, seeds, config).unionByName(after_rows)
        resumed = decisions.decision_timeline(fed, config, seeds=seeds, observation=resumed_counts)
        earlier_rows, resumed_rows = _collect_timeline(earlier), _collect_timeline(resumed)
        combined = sorted(earlier_rows + resumed_rows, key=lambda row: (row["policy"], row["cluster"], row["at"]))
        assert resumed_rows, minute
        assert len(combined) == len(whole), minute
        for row, want in zip(combined, whole, strict=True):
            assert row["throttle_factor"] == pytest.approx(want["throttle_factor"], abs=TOLERANCE), (minute, want)
            assert dict(row, throttle_factor=None) == dict(want, throttle_factor=None), minute
        # The runs' counts are those of their own rows: a seeded cluster counts in the run that resumed it too.
        for counts, rows in ((earlier_counts, earlier_rows), (resumed_counts, resumed_rows)):
            assert counts.get["rows"] == len(rows)
            assert counts.get["clusters"] == len({row["cluster"] for row in rows})
        for frame in (before_rows, earlier, seeds):
            frame.unpersist()


def test_seeds_a_timeline_cannot_resume_from_are_refused(spark):
    config = _config(GENERATED_PARAMS[0])
    frame = spark.createDataFrame([_message_row(m, m["cluster"]) for m in _duplicated_history()], schemas.MESSAGES)
    minute = 60_000_000
    cases = {
        "seeded twice": [("c", minute, minute, 1.0, 1.0), ("c", 2 * minute, minute, 1.0, 1.0)],
        "has no the plugin's last observation, its factor": [("c", minute, None, None, 1.0)],
        "has no the graded factor held": [("c", minute, minute, 1.0, None)],
        "is not on the grid": [("c", minute + 1, minute, 1.0, 1.0)],
    }
    for message, seeds in cases.items():
        with pytest.raises(ValueError, match=message):
            decisions.decision_timeline(frame, config, seeds=spark.createDataFrame(seeds, SEEDS))
