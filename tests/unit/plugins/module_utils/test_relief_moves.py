"""relief_moves: the requests a relief plan becomes, the throttle it sets and puts back, and the moves' progress."""

import pytest

from ansible_collections.headroom.kafka.plugins.module_utils import relief_moves

L, F = relief_moves.LEADER_REPLICAS, relief_moves.FOLLOWER_REPLICAS
LR, FR = relief_moves.LEADER_RATE, relief_moves.FOLLOWER_RATE


def move(topic, number, source, destination, kind="broker", size=100, from_dir="/a", to_dir="/a"):
    return {
        "topic": topic,
        "partition": number,
        "from_broker": source,
        "from_log_dir": from_dir,
        "to_broker": destination,
        "to_log_dir": to_dir,
        "bytes": size,
        "kind": kind,
    }


PARTITIONS = [
    {"topic": "t", "partition": 0, "replicas": [1, 2], "isr": [1, 2]},
    {"topic": "t", "partition": 1, "replicas": [2, 3], "isr": [2, 3]},
    {"topic": "u", "partition": 0, "replicas": [2], "isr": [2]},
]


def test_moves_inside_a_broker_become_log_dir_assignments_and_the_others_reassignments():
    moves = [move("t", 0, 1, 1, "log_dir", to_dir="/b"), move("t", 1, 2, 4), move("u", 0, 2, 3)]
    assert relief_moves.log_dir_assignments(moves) == {("t", 0, 1): "/b"}
    # the destination takes the source's place: the preferred leader changes only when the leader moves
    assert relief_moves.reassignment_targets(moves, PARTITIONS) == {("t", 1): [4, 3], ("u", 0): [3]}


def test_a_move_of_a_replica_its_broker_does_not_hold_is_refused_naming_it():
    with pytest.raises(relief_moves.MovesError, match=r"broker 3 holds no replica of t-0 \(its replicas: \[1, 2\]\)"):
        relief_moves.reassignment_targets([move("t", 0, 3, 4)], PARTITIONS)
    with pytest.raises(relief_moves.MovesError, match="partition t-9 is not in the cluster's metadata"):
        relief_moves.reassignment_targets([move("t", 9, 3, 4)], PARTITIONS)


def test_the_throttle_is_set_as_kafka_reassign_partitions_sets_it_keeping_what_was_there():
    targets = {("t", 1): [4, 3], ("u", 0): [3]}
    now = {"t": {L: "7:1", F: None}, "u": {L: "*", F: None}}
    settings = relief_moves.throttle_settings(targets, PARTITIONS, 1000, now)
    assert settings["topics"] == {"t": {L: "1:2,1:3,7:1", F: "1:4"}, "u": {F: "0:3"}}  # "*" covers u's leaders
    assert settings["brokers"] == {str(b): {LR: "1000", FR: "1000"} for b in (2, 3, 4)}
    assert relief_moves.involved_brokers(targets, PARTITIONS) == [2, 3, 4]


def test_what_the_throttle_changes_is_recorded_and_put_back_exactly():
    targets = {("t", 1): [4, 3]}
    topic_configs = {"t": {L: "7:1", F: None}}
    broker_configs = {"2": {LR: "5", FR: None}, "3": {LR: None, FR: None}, "4": {LR: None, FR: None}}
    settings = relief_moves.throttle_settings(targets, PARTITIONS, 1000, topic_configs)
    before = relief_moves.recorded_before(settings, topic_configs, broker_configs)
    assert before == {
        "topics": {"t": {L: "7:1", F: None}},
        "brokers": {"2": {LR: "5", FR: None}, "3": {LR: None, FR: None}, "4": {LR: None, FR: None}},
    }
    assert relief_moves.restore_settings(before) == before


def test_reassignments_the_run_did_not_start_are_foreign():
    ongoing = [{"topic": "t", "partition": 1}, {"topic": "x", "partition": 0}]
    assert relief_moves.foreign_reassignments(ongoing) == ongoing
    assert relief_moves.foreign_reassignments(ongoing, [move("t", 1, 2, 4)]) == [{"topic": "x", "partition": 0}]
    # a log dir move explains no reassignment
    assert relief_moves.foreign_reassignments(ongoing, [move("t", 1, 2, 2, "log_dir")]) == ongoing


def row(broker, log_dir, *replicas):
    return {
        "broker_id": broker,
        "log_dir": log_dir,
        "total_bytes": 1000,
        "usable_bytes": 600,
        "replicas": [
            {"topic": t, "partition": p, "size_bytes": size, "offset_lag": 0, "is_future": future}
            for t, p, size, future in replicas
        ],
    }


@pytest.mark.parametrize(
    ("log_dirs", "partitions", "ongoing", "state", "copied"),
    [
        ([row(1, "/a", ("t", 0, 100, False))], PARTITIONS, [], "not started", 0),
        ([row(1, "/a", ("t", 0, 100, False)), row(1, "/b", ("t", 0, 40, True))], PARTITIONS, [], "moving", 40),
        ([row(1, "/b", ("t", 0, 100, False))], PARTITIONS, [], "done", 100),
        # the broker did not answer DescribeLogDirs (a busy machine): the move may be running, so it is waited for
        ([row(2, "/a")], PARTITIONS, [], "moving", 0),
    ],
)
def test_a_log_dir_move_is_followed_by_its_future_replica(log_dirs, partitions, ongoing, state, copied):
    [report] = relief_moves.progress([move("t", 0, 1, 1, "log_dir", to_dir="/b")], log_dirs, partitions, ongoing)
    assert (report["state"], report["copied_bytes"]) == (state, copied)
    assert relief_moves.running([report]) == ([] if state in ("not started", "done") else [report])


@pytest.mark.parametrize(
    ("replicas", "ongoing", "at_destination", "state", "copied"),
    [
        ([2, 3], [], [], "not started", 0),
        ([2, 3, 4], [{"topic": "t", "partition": 1}], [("t", 1, 30, False)], "moving", 30),
        ([4, 3], [], [("t", 1, 100, False)], "done", 100),
    ],
)
def test_a_reassignment_is_followed_by_its_new_replica_and_the_controller(
    replicas, ongoing, at_destination, state, copied
):
    partitions = [{"topic": "t", "partition": 1, "replicas": replicas, "isr": replicas}]
    [report] = relief_moves.progress([move("t", 1, 2, 4)], [row(4, "/a", *at_destination)], partitions, ongoing)
    assert (report["state"], report["copied_bytes"]) == (state, copied)
    assert relief_moves.unfinished([report]) == ([] if state == "done" else [report])


@pytest.mark.parametrize(
    ("replicas", "log_dirs", "state", "copied"),
    [
        # Metadata still lists the old and new replicas together a moment after the controller ended the reassignment
        ([2, 3, 4], [row(4, "/b", ("t", 1, 100, False))], "moving", 100),
        # the new replica arrived in another log dir than the planned one: not done, and to be moved there
        ([4, 3], [row(4, "/a", ("t", 1, 100, False))], "in another log dir", 0),
        # ... and on its way there, inside the broker
        ([4, 3], [row(4, "/a", ("t", 1, 100, False)), row(4, "/b", ("t", 1, 60, True))], "moving", 60),
        # the destination broker did not answer DescribeLogDirs: nothing says where the replica is
        ([4, 3], [], "moving", 0),
    ],
)
def test_a_cross_broker_move_is_done_only_in_its_destination_log_dir(replicas, log_dirs, state, copied):
    partitions = [{"topic": "t", "partition": 1, "replicas": replicas, "isr": replicas}]
    [report] = relief_moves.progress([move("t", 1, 2, 4, to_dir="/b")], log_dirs, partitions, [])
    assert (report["state"], report["copied_bytes"]) == (state, copied)
    assert relief_moves.running([report]) == [report]
    assert relief_moves.misplaced([report]) == ({("t", 1, 4): "/b"} if state == "in another log dir" else {})


def test_a_cross_broker_move_names_its_destination_log_dir_and_a_move_not_started_is_not_waited_for():
    moves = [move("t", 0, 1, 1, "log_dir", to_dir="/b"), move("t", 1, 2, 4, to_dir="/c")]
    assert relief_moves.destination_log_dirs(moves) == {("t", 1, 4): "/c"}
    [report] = relief_moves.progress(moves[1:], [], [{"topic": "t", "partition": 1, "replicas": [2, 3]}], [])
    assert report["state"] == "not started" and relief_moves.running([report]) == []


@pytest.mark.parametrize(
    ("pending", "message"),
    [
        ([], "pending must be an earlier run's pending result, a dict with a list of moves (got [])"),
        ({"moves": [{"topic": "t"}]}, "pending.moves[0] lacks partition, from_broker"),
        ({"moves": [move("t", 0, 1, 2, kind="disk")]}, "pending.moves[0].kind must be log_dir or broker (got 'disk')"),
        ({"moves": [], "throttles_before": {"x": {}}}, "pending.throttles_before must be a dict with topics and"),
    ],
)
def test_a_bad_pending_is_refused_naming_the_field(pending, message):
    with pytest.raises(relief_moves.MovesError) as info:
        relief_moves.validate_pending(pending)
    assert message in str(info.value)


def test_an_earlier_run_s_pending_is_taken_as_it_was_returned():
    pending = {"moves": [move("t", 0, 1, 2)], "throttles_before": {"topics": {"t": {L: None}}}}
    assert relief_moves.validate_pending(pending) == {
        "moves": pending["moves"],
        "throttles_before": {"topics": {"t": {L: None}}, "brokers": {}},
    }
    assert relief_moves.validate_pending(None) is None


def test_the_diff_shows_the_used_bytes_of_every_log_dir_a_move_touches():
    volumes = [row(1, "/a"), row(1, "/b"), row(2, "/a")]
    diff = relief_moves.usage_diff(volumes, [move("t", 0, 1, 1, "log_dir", size=150, to_dir="/b")])
    assert diff == {
        "before": {"broker 1 /a": {"used_bytes": 400}, "broker 1 /b": {"used_bytes": 400}},
        "after": {"broker 1 /a": {"used_bytes": 250}, "broker 1 /b": {"used_bytes": 550}},
    }
