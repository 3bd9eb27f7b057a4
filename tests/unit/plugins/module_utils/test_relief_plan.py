"""relief_plan: which replicas leave a filling log dir and where they go; table tests for each rule, and properties
over generated clusters (hypothesis) for the rules every plan keeps."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.headroom.kafka.plugins.module_utils import relief_plan

MIB = 1 << 20
AT = {"type": "min_free_bytes", "level": 20 * MIB}
TO = {"type": "min_free_bytes", "level": 40 * MIB}


def volume(broker, log_dir, free, total=100 * MIB, **extra):
    return dict({"broker_id": broker, "log_dir": log_dir, "total_bytes": total, "usable_bytes": free}, **extra)


def replica(topic, partition, broker, log_dir, size, future=False):
    return {
        "topic": topic,
        "partition": partition,
        "broker_id": broker,
        "log_dir": log_dir,
        "size_bytes": size,
        "is_future": future,
    }


def partition(topic, number, brokers, isr=None, min_insync=1, reassigning=False):
    return {
        "topic": topic,
        "partition": number,
        "replicas": list(brokers),
        "isr": list(brokers if isr is None else isr),
        "min_insync_replicas": min_insync,
        "reassigning": reassigning,
    }


def moves_of(result):
    return [(m["topic"], m["partition"], m["to_broker"], m["to_log_dir"], m["kind"]) for m in result["moves"]]


# -- table tests ------------------------------------------------------------------------------------------------------
def test_a_full_log_dir_moves_to_the_same_broker_s_other_log_dir_first():
    volumes = [volume(1, "/a", 10 * MIB), volume(1, "/b", 90 * MIB), volume(2, "/a", 95 * MIB)]
    replicas = [replica("t", 0, 1, "/a", 30 * MIB), replica("t", 0, 2, "/a", 30 * MIB)]
    result = relief_plan.plan(volumes, replicas, [partition("t", 0, [1, 2])], AT, TO)
    assert moves_of(result) == [("t", 0, 1, "/b", relief_plan.INSIDE)]
    assert result["volumes"] == [
        {
            "broker_id": 1,
            "log_dir": "/a",
            "free_before": 10 * MIB,
            "free_after": 40 * MIB,
            "relieve_to_bytes": 40 * MIB,
            "reached": True,
        }
    ]
    assert result["blocked"] == [] and result["bytes"] == 30 * MIB


def test_without_room_on_its_broker_a_replica_goes_to_a_broker_without_one_of_its_partition():
    volumes = [volume(1, "/a", 10 * MIB), volume(2, "/a", 90 * MIB), volume(3, "/a", 80 * MIB)]
    replicas = [replica("t", 0, 1, "/a", 30 * MIB), replica("t", 0, 2, "/a", 30 * MIB)]
    result = relief_plan.plan(volumes, replicas, [partition("t", 0, [1, 2])], AT, TO)
    assert moves_of(result) == [("t", 0, 3, "/a", relief_plan.ACROSS)]


def test_the_fewest_bytes_that_reach_the_target():
    volumes = [volume(1, "/a", 10 * MIB), volume(1, "/b", 95 * MIB)]
    replicas = [replica("t", p, 1, "/a", size * MIB) for p, size in enumerate((9, 6, 31, 12, 20))]
    partitions = [partition("t", p, [1]) for p in range(5)]
    result = relief_plan.plan(volumes, replicas, partitions, AT, TO)
    assert [m["bytes"] // MIB for m in result["moves"]] == [31]


def test_a_destination_never_reaches_its_own_relieve_at():
    volumes = [volume(1, "/a", 10 * MIB), volume(1, "/b", 45 * MIB)]
    replicas = [replica("t", 0, 1, "/a", 30 * MIB)]
    result = relief_plan.plan(volumes, replicas, [partition("t", 0, [1])], AT, TO)
    assert result["moves"] == []
    [blocked] = result["blocked"]
    assert blocked["short_bytes"] == 30 * MIB
    assert blocked["reason"] == (
        "broker 1 log dir /a: 31457280 bytes short of its relieve_to target: no log dir has room for it "
        "(1 replica, 31457280 bytes)"
    )


def test_the_replicas_a_reason_keeps_are_counted_beside_their_bytes():
    volumes = [volume(1, "/a", 10 * MIB), volume(1, "/b", 45 * MIB)]
    replicas = [replica("t", 0, 1, "/a", 30 * MIB), replica("t", 1, 1, "/a", 30 * MIB)]
    result = relief_plan.plan(volumes, replicas, [partition("t", 0, [1]), partition("t", 1, [1])], AT, TO)
    assert result["moves"] == []
    assert result["blocked"][0]["reason"].endswith("no log dir has room for it (2 replicas, 62914560 bytes)")


def test_a_volume_being_relieved_never_takes_a_replica_back():
    # broker 2's /a is relieved first (it is further from its target) onto broker 1, and ends above relieve_at but
    # short of relieve_to; its /b, relieved next, must not hand a replica back to it
    volumes = [volume(1, "/a", 34 * MIB), volume(2, "/a", 9 * MIB), volume(2, "/b", 9 * MIB)]
    replicas = [replica("t", 0, 2, "/a", 13 * MIB), replica("t", 1, 2, "/b", 1 * MIB)]
    partitions = [partition("t", 0, [2]), partition("t", 1, [2])]
    result = relief_plan.plan(volumes, replicas, partitions, AT, TO)
    assert moves_of(result) == [("t", 0, 1, "/a", relief_plan.ACROSS)]
    assert [(v["log_dir"], v["free_after"] // MIB) for v in result["volumes"]] == [("/a", 22), ("/b", 9)]
    assert [b["log_dir"] for b in result["blocked"]] == ["/a", "/b"]


def test_the_throttle_s_limit_is_a_floor_for_destinations_when_it_is_the_larger():
    volumes = [volume(1, "/a", 10 * MIB), volume(1, "/b", 55 * MIB)]
    replicas = [replica("t", 0, 1, "/a", 30 * MIB)]
    limit = {"type": "min_free_percentage", "level": 30}
    assert relief_plan.plan(volumes, replicas, [partition("t", 0, [1])], AT, TO)["moves"] != []
    assert relief_plan.plan(volumes, replicas, [partition("t", 0, [1])], AT, TO, limit=limit)["moves"] == []


@pytest.mark.parametrize(
    ("partitions", "replicas", "reason"),
    [
        ([partition("t", 0, [1, 2], isr=[2])], [], "its partition is under-replicated"),
        ([partition("t", 0, [1, 2], reassigning=True)], [], "it is already moving"),
        ([partition("t", 0, [1, 2])], [replica("t", 0, 1, "/b", MIB, future=True)], "it is already moving"),
        (
            [partition("t", 0, [1, 2], min_insync=2)],
            [],
            "no other log dir of its broker has room, and moving it to another broker could leave fewer in-sync "
            "replicas than min.insync.replicas",
        ),
    ],
)
def test_a_replica_that_may_not_move_blocks_with_its_reason(partitions, replicas, reason):
    volumes = [
        volume(1, "/a", 10 * MIB),
        volume(1, "/b", 21 * MIB),
        volume(2, "/a", 90 * MIB),
        volume(3, "/a", 90 * MIB),
    ]
    replicas = [replica("t", 0, 1, "/a", 30 * MIB), replica("t", 0, 2, "/a", 30 * MIB)] + replicas
    result = relief_plan.plan(volumes, replicas, partitions, AT, TO)
    assert result["moves"] == []
    assert result["blocked"][0]["reason"].endswith("{0} (1 replica, 31457280 bytes)".format(reason))


def test_distinct_racks_stay_distinct():
    volumes = [volume(b, "/a", 10 * MIB if b == 1 else 90 * MIB) for b in (1, 2, 3, 4)]
    replicas = [replica("t", 0, 1, "/a", 30 * MIB), replica("t", 0, 2, "/a", 30 * MIB)]
    racks = {1: "r1", 2: "r2", 3: "r2", 4: "r3"}
    result = relief_plan.plan(volumes, replicas, [partition("t", 0, [1, 2])], AT, TO, racks=racks)
    assert moves_of(result) == [("t", 0, 4, "/a", relief_plan.ACROSS)]
    racks[4] = "r2"
    assert relief_plan.plan(volumes, replicas, [partition("t", 0, [1, 2])], AT, TO, racks=racks)["moves"] == []


def test_the_run_s_bounds_hold_and_say_so():
    volumes = [volume(1, "/a", 0, total=200 * MIB), volume(1, "/b", 200 * MIB, total=200 * MIB)]
    replicas = [replica("t", p, 1, "/a", 10 * MIB) for p in range(6)]
    partitions = [partition("t", p, [1]) for p in range(6)]
    by_count = relief_plan.plan(volumes, replicas, partitions, AT, TO, max_partitions=2)
    assert len(by_count["moves"]) == 2 and "the run's bound of 2 partitions" in by_count["blocked"][0]["reason"]
    by_bytes = relief_plan.plan(volumes, replicas, partitions, AT, TO, max_bytes=25 * MIB)
    assert by_bytes["bytes"] == 20 * MIB and "the run's bound of 26214400 bytes" in by_bytes["blocked"][0]["reason"]


def test_a_volume_above_relieve_at_is_left_alone_and_an_offline_one_is_skipped():
    volumes = [volume(1, "/a", 21 * MIB), volume(1, "/b", 90 * MIB), volume(2, "/a", 0, error="KafkaStorageException")]
    result = relief_plan.plan(volumes, [replica("t", 0, 1, "/a", 30 * MIB)], [partition("t", 0, [1])], AT, TO)
    assert result["moves"] == [] and result["volumes"] == []
    assert result["skipped"] == [{"broker_id": 2, "log_dir": "/a", "reason": "log dir error KafkaStorageException"}]


@pytest.mark.parametrize(
    ("relieve_at", "relieve_to", "limit", "bounds", "message"),
    [
        (AT, AT, None, {}, "relieve_to.level must be greater than relieve_at.level"),
        (AT, {"type": "min_free_percentage", "level": 50}, None, {}, "relieve_at.type and relieve_to.type must"),
        ({"type": "consumed_space", "level": 1}, TO, None, {}, "relieve_at.type must be one of min_free_bytes"),
        (AT, TO, {"type": "min_free_bytes", "level": -1}, {}, "limit.level must be >= 0 (got -1)"),
        (AT, TO, None, {"max_bytes": 0}, "max_bytes must be a whole number >= 1 or None for no bound (got 0)"),
        (AT, TO, None, {"max_partitions": True}, "max_partitions must be a whole number >= 1"),
    ],
)
def test_bad_thresholds_and_bounds_are_refused_naming_the_field(relieve_at, relieve_to, limit, bounds, message):
    with pytest.raises(ValueError) as info:
        relief_plan.plan([], [], [], relieve_at, relieve_to, limit=limit, **bounds)
    assert message in str(info.value)


# -- properties -------------------------------------------------------------------------------------------------------
@st.composite
def clusters(draw):
    brokers = draw(st.integers(1, 4))
    dirs = draw(st.integers(1, 2))
    racks = {b: draw(st.sampled_from([None, "r1", "r2", "r3"])) for b in range(1, brokers + 1)}
    volumes = [
        volume(b, "/d{0}".format(d), draw(st.integers(0, 100)) * MIB)
        for b in range(1, brokers + 1)
        for d in range(dirs)
    ]
    replicas, partitions = [], []
    for number in range(draw(st.integers(0, 8))):
        factor = draw(st.integers(1, brokers))
        placed = draw(st.permutations(list(range(1, brokers + 1))))[:factor]
        isr = placed if draw(st.booleans()) else placed[1:]
        partitions.append(partition("t", number, placed, isr=isr, min_insync=draw(st.integers(1, 2))))
        size = draw(st.integers(0, 40)) * MIB
        for broker in placed:
            replicas.append(replica("t", number, broker, "/d{0}".format(draw(st.integers(0, dirs - 1))), size))
    return volumes, replicas, partitions, racks


@settings(max_examples=300, deadline=None)
@given(cluster=clusters(), max_partitions=st.one_of(st.none(), st.integers(1, 4)))
def test_every_plan_keeps_the_rules(cluster, max_partitions):
    volumes, replicas, partitions, racks = cluster
    result = relief_plan.plan(volumes, replicas, partitions, AT, TO, racks=racks, max_partitions=max_partitions)
    assert result == relief_plan.plan(volumes, replicas, partitions, AT, TO, racks=racks, max_partitions=max_partitions)
    free = {(v["broker_id"], v["log_dir"]): v["usable_bytes"] for v in volumes}
    brokers = {(p["topic"], p["partition"]): set(p["replicas"]) for p in partitions}
    described = {(p["topic"], p["partition"]): p for p in partitions}
    moved = [(m["topic"], m["partition"]) for m in result["moves"]]
    assert len(moved) == len(set(moved)), "a partition moves once per run"
    if max_partitions is not None:
        assert len(moved) <= max_partitions
    relieved = {key for key, free_bytes in free.items() if free_bytes <= AT["level"]}
    for move in result["moves"]:
        key = (move["topic"], move["partition"])
        part = described[key]
        assert (move["to_broker"], move["to_log_dir"]) not in relieved, "a relieved volume never takes a replica"
        assert set(part["isr"]) == set(part["replicas"]), "never a replica of an under-replicated partition"
        free[(move["from_broker"], move["from_log_dir"])] += move["bytes"]
        free[(move["to_broker"], move["to_log_dir"])] -= move["bytes"]
        assert free[(move["to_broker"], move["to_log_dir"])] > AT["level"], "a destination keeps its relieve_at"
        if move["kind"] == relief_plan.ACROSS:
            assert move["to_broker"] not in brokers[key], "never two replicas of a partition on one broker"
            followers = 1 if len(part["replicas"]) > 1 else 0
            assert len(part["isr"]) - followers >= part["min_insync_replicas"]
            old = [racks[b] for b in brokers[key]]
            if None not in old and len(set(old)) == len(old):
                now = [racks[b] for b in (brokers[key] - {move["from_broker"]}) | {move["to_broker"]}]
                assert None not in now and len(set(now)) == len(now), "distinct racks stay distinct"
            brokers[key] = (brokers[key] - {move["from_broker"]}) | {move["to_broker"]}
        else:
            assert move["to_broker"] == move["from_broker"] and move["to_log_dir"] != move["from_log_dir"]
    for report in result["volumes"]:
        key = (report["broker_id"], report["log_dir"])
        assert report["free_after"] == free[key]
        assert report["reached"] == (free[key] >= TO["level"])
        if report["reached"]:
            for move in result["moves"]:
                if (move["from_broker"], move["from_log_dir"]) == key:
                    assert free[key] - move["bytes"] < TO["level"], "every move is needed to reach the target"
        else:
            assert any(b["broker_id"] == key[0] and b["log_dir"] == key[1] for b in result["blocked"])
