"""The disk guard's rules: the quota set at each factor, the factor read back, and the decision with missing data."""

import pytest

from ansible_collections.headroom.kafka.plugins.module_utils import disk_guard, quota_spec

QUOTAS = [
    {"entity": {"user": "alice"}, "producer_byte_rate": 1000, "consumer_byte_rate": 5000},
    {"entity": {"user": "alice", "client_id": "batch"}, "producer_byte_rate": 333},
    {"entity": {"user": "<default>", "client_id": "<default>"}, "producer_byte_rate": 700},
    {"entity": {"user": "ops"}, "request_percentage": 50},
    {"entity": {"user": "ops", "client_id": "tool"}, "producer_byte_rate": 80},
    {"entity": {"client_id": "legacy"}, "producer_byte_rate": 90},
    {"entity": {"ip": "10.0.0.1"}, "connection_creation_rate": 5},
]


def spec_of(target):
    """{"user=alice": {key: value}} of a quota set, for readable assertions."""
    return dict((quota_spec.describe_entity(entity), values) for entity, values in target.values())


def declaration(**extra):
    kwargs = {"default_producer_byte_rate": 2000, "excluded_principals": ["User:ops", "User:broker"]}
    kwargs.update(extra)
    return disk_guard.Declaration(QUOTAS, **kwargs)


def test_at_factor_one_kafka_holds_the_declared_set_the_default_user_and_the_excluded_principals():
    assert spec_of(declaration().quotas_at(1.0)) == {
        "user=alice": {"producer_byte_rate": 1000.0, "consumer_byte_rate": 5000.0},
        "user=alice,client_id=batch": {"producer_byte_rate": 333.0},
        "user=<default>,client_id=<default>": {"producer_byte_rate": 700.0},
        "user=ops": {"request_percentage": 50.0, "producer_byte_rate": float(disk_guard.UNLIMITED_BYTE_RATE)},
        "user=ops,client_id=tool": {"producer_byte_rate": 80.0},
        "client_id=legacy": {"producer_byte_rate": 90.0},
        "ip=10.0.0.1": {"connection_creation_rate": 5.0},
        "user=<default>": {"producer_byte_rate": 2000.0},
        "user=broker": {"producer_byte_rate": float(disk_guard.UNLIMITED_BYTE_RATE)},
    }


@pytest.mark.parametrize(
    "factor, alice, batch, default",
    [
        (0.5, 500.0, 166.0, 1000.0),  # rounded down to whole bytes
        (0.001, 1.0, 1.0, 2.0),
        (0.0, 1.0, 1.0, 1.0),  # never 0: Kafka refuses a quota of 0
    ],
)
def test_produce_rates_scale_with_the_factor_and_nothing_else_does(factor, alice, batch, default):
    target = spec_of(declaration().quotas_at(factor))
    assert target["user=alice"] == {"producer_byte_rate": alice, "consumer_byte_rate": 5000.0}
    assert target["user=alice,client_id=batch"] == {"producer_byte_rate": batch}
    assert target["user=<default>"] == {"producer_byte_rate": default}
    assert target["user=ops,client_id=tool"] == {"producer_byte_rate": 80.0}, (
        "an excluded principal's own entities keep their base"
    )
    assert target["user=ops"]["producer_byte_rate"] == float(disk_guard.UNLIMITED_BYTE_RATE)
    assert target["ip=10.0.0.1"] == {"connection_creation_rate": 5.0}


def test_an_excluded_principal_with_a_declared_rate_keeps_it_and_the_unlimited_rate_can_be_set():
    guard = disk_guard.Declaration(
        [{"entity": {"user": "ops"}, "producer_byte_rate": 64}],
        default_producer_byte_rate=10,
        excluded_principals=["User:ops", "User:mirror"],
        excluded_producer_byte_rate=1 << 30,
    )
    assert spec_of(guard.quotas_at(0.0)) == {
        "user=ops": {"producer_byte_rate": 64.0},
        "user=mirror": {"producer_byte_rate": float(1 << 30)},
        "user=<default>": {"producer_byte_rate": 1.0},
    }


def test_the_default_users_rate_may_come_from_the_quotas_and_its_other_keys_stay():
    guard = disk_guard.Declaration(
        [{"entity": {"user": "<default>"}, "producer_byte_rate": 400, "consumer_byte_rate": 9}]
    )
    assert spec_of(guard.quotas_at(0.25)) == {
        "user=<default>": {"producer_byte_rate": 100.0, "consumer_byte_rate": 9.0}
    }
    assert (
        disk_guard.Declaration(
            [{"entity": {"user": "<default>"}, "producer_byte_rate": 400}], default_producer_byte_rate=400
        ).default_rate
        == 400.0
    )


@pytest.mark.parametrize("applied, factor", [(None, None), (2000.0, 1.0), (1000.0, 0.5), (1.0, 0.0), (4000.0, 1.0)])
def test_the_factor_applied_is_read_back_from_the_default_users_rate(applied, factor):
    current = {} if applied is None else {disk_guard.DEFAULT_USER: ({"user": None}, {"producer_byte_rate": applied})}
    assert declaration().factor_applied(current) == factor


def test_a_factor_applied_round_trips_through_kafkas_whole_numbers():
    guard = declaration()
    for factor in (0.0, 0.25, 0.5, 1.0):
        assert guard.factor_applied(guard.quotas_at(factor)) == factor


def test_client_id_only_produce_rates_are_shadowed_by_the_default_user():
    assert declaration().shadowed_client_ids() == [{"client_id": "legacy"}]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            {"default_producer_byte_rate": None},
            r"^default_producer_byte_rate is required \(or a quotas entry for user <default>",
        ),
        (
            {"default_producer_byte_rate": 0},
            r"^default_producer_byte_rate must be a whole number of bytes per second "
            r"from 1 to 9223372036854775807 \(got 0\)",
        ),
        ({"default_producer_byte_rate": 1.5}, r"from 1 to 9223372036854775807 \(got 1.5\)"),
        (
            {"excluded_principals": ["ops"]},
            r"^excluded_principals\[0\] must be a principal User:<name>, such as User:admin \(got 'ops'\)",
        ),
        ({"excluded_principals": ["User:"]}, r"^excluded_principals\[0\] must be a principal User:<name>"),
        ({"excluded_principals": ["User:a", "User:a"]}, r"^excluded_principals\[1\]: User:a is listed twice"),
        ({"excluded_producer_byte_rate": -1}, r"^excluded_producer_byte_rate must be a whole number"),
    ],
)
def test_a_declaration_the_guard_cannot_enforce_is_refused_naming_the_field(kwargs, message):
    with pytest.raises(disk_guard.GuardError, match=message):
        declaration(**kwargs)


def test_the_default_users_rate_given_twice_must_agree_and_absent_entries_are_refused():
    with pytest.raises(
        disk_guard.GuardError,
        match=r"^default_producer_byte_rate 5 and the <default> user's producer_byte_rate 400 in quotas disagree",
    ):
        disk_guard.Declaration(
            [{"entity": {"user": "<default>"}, "producer_byte_rate": 400}], default_producer_byte_rate=5
        )
    with pytest.raises(
        disk_guard.GuardError, match=r"^quotas\[0\]\.state: the guard holds the whole quota set.*\(got 'absent'\)"
    ):
        disk_guard.Declaration([{"entity": {"user": "gone"}, "state": "absent"}], default_producer_byte_rate=5)
    with pytest.raises(disk_guard.GuardError, match=r"^quotas\[0\]\.producer_byte_rate must be greater than 0"):
        disk_guard.Declaration([{"entity": {"user": "x"}, "producer_byte_rate": 0}], default_producer_byte_rate=5)


@pytest.mark.parametrize("factor", [-0.1, 1.5, True, "1"])
def test_a_factor_outside_0_to_1_is_a_bug_not_a_quota(factor):
    with pytest.raises(disk_guard.GuardError, match="throttle factor must be a number from 0.0 to 1.0"):
        declaration().quotas_at(factor)


# -- the decision ------------------------------------------------------------------------------------------------------
def volume(broker, usable, total=1000, log_dir="/data"):
    return {"broker_id": broker, "log_dir": log_dir, "total_bytes": total, "usable_bytes": usable}


STRIMZI = disk_guard.Policy(
    "strimzi", min_available_ratio=0.1, throttle_factor_fallback=0.5, throttle_factor_validity=300
)
GRADED = disk_guard.Policy(
    "graded", soft_limit={"type": "min_free_bytes", "level": 500}, hard_limit={"type": "min_free_bytes", "level": 100}
)


def view(volumes, missing=()):
    return {"volumes": volumes, "complete": not missing, "missing_brokers": list(missing)}


def test_strimzi_a_complete_observation_decides_and_restarts_the_clock():
    decision, memory = disk_guard.decide(
        STRIMZI, view([volume(1, 50), volume(2, 900)]), 1000.0, disk_guard.GuardMemory(), None
    )
    assert (decision["throttle_factor"], decision["state"], decision["reason"], decision["fallback_applied"]) == (
        0.0,
        "PAUSE",
        "observed",
        False,
    )
    assert memory.observed_at == 1000.0 and sorted(memory.brokers) == [1, 2]


@pytest.mark.parametrize(
    "now, applied, factor, fallback",
    [
        (1300.0, 0.0, 0.0, False),  # now - observed_at == validity: still valid (the plugin expires strictly after)
        (1300.5, 0.0, 0.5, True),
        (1100.0, None, 0.5, True),  # nothing applied to keep
    ],
)
def test_strimzi_an_incomplete_observation_keeps_the_factor_while_it_is_valid_then_falls_back(
    now, applied, factor, fallback
):
    memory = disk_guard.GuardMemory(1000.0, {1: {"observed_at": 1000.0, "volumes": [volume(1, 50)]}})
    decision, kept = disk_guard.decide(STRIMZI, view([volume(2, 900)], missing=[1]), now, memory, applied)
    assert (decision["throttle_factor"], decision["fallback_applied"], decision["observed"]) == (
        factor,
        fallback,
        False,
    )
    assert "no answer from brokers 1" in decision["reason"] and kept is memory


def test_strimzi_without_a_record_of_an_observation_falls_back_at_once():
    decision, _memory = disk_guard.decide(STRIMZI, view([], missing=[3]), 5.0, disk_guard.GuardMemory(), 1.0)
    assert decision["throttle_factor"] == 0.5 and decision["reason"].endswith(
        "no complete observation on record: fallback factor 0.5"
    )


def test_strimzi_a_broker_that_left_the_view_is_remembered_until_its_validity_ends():
    full = disk_guard.GuardMemory(1000.0, {1: {"observed_at": 1000.0, "volumes": [volume(1, 50)]}})
    decision, memory = disk_guard.decide(STRIMZI, view([volume(2, 900)]), 1299.0, full, 1.0)
    assert decision["throttle_factor"] == 0.0 and decision["remembered_brokers"] == [1]
    assert memory.brokers[1]["observed_at"] == 1000.0, "remembered, not observed again"
    decision, memory = disk_guard.decide(STRIMZI, view([volume(2, 900)]), 1300.0, full, 0.0)
    assert decision["throttle_factor"] == 1.0 and decision["remembered_brokers"] == [] and sorted(memory.brokers) == [2]


@pytest.mark.parametrize("action, factor, missing_applied", [("pause", 0.0, True), ("open", 0.75, False)])
def test_graded_missing_data_takes_the_missing_data_action(action, factor, missing_applied):
    policy = disk_guard.Policy(
        "graded",
        soft_limit={"type": "min_free_bytes", "level": 500},
        hard_limit={"type": "min_free_bytes", "level": 100},
        missing_data_action=action,
    )
    decision, _memory = disk_guard.decide(
        policy, view([volume(2, 400)], missing=[1]), 0.0, disk_guard.GuardMemory(), None
    )
    assert (decision["throttle_factor"], decision["missing_data_applied"]) == (factor, missing_applied)
    assert "missing_data_action " + action in decision["reason"]


def test_graded_throttles_between_the_soft_and_the_hard_limit():
    decision, _memory = disk_guard.decide(
        GRADED, view([volume(1, 300), volume(2, 800)]), 0.0, disk_guard.GuardMemory(), None
    )
    assert (decision["throttle_factor"], decision["state"]) == (0.5, "THROTTLE")


def test_memory_survives_json_and_anything_else_is_no_memory():
    memory = disk_guard.GuardMemory(12.5, {3: {"observed_at": 12.5, "volumes": [volume(3, 1)]}})
    assert disk_guard.GuardMemory.from_json(memory.to_json()).to_json() == memory.to_json()
    for junk in ({}, [], None, {"observed_at": "x", "brokers": {}}, {"observed_at": 1, "brokers": {"a": {}}}):
        assert disk_guard.GuardMemory.from_json(junk).observed_at is None


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"policy": "binary"}, r"^policy must be strimzi or graded \(got 'binary'\)"),
        ({"policy": "strimzi"}, r"one of min_available_bytes or min_available_ratio is required"),
        (
            {"policy": "strimzi", "min_available_bytes": 1, "throttle_factor_fallback": 2},
            r"^throttle_factor_fallback must be from 0.0 to 1.0",
        ),
        (
            {"policy": "strimzi", "min_available_bytes": 1, "throttle_factor_validity": -1},
            r"^throttle_factor_validity must be a duration",
        ),
        (
            {
                "policy": "graded",
                "soft_limit": {"type": "min_free_bytes", "level": 1},
                "hard_limit": {"type": "min_free_bytes", "level": 2},
            },
            r"^soft_limit.level must be greater than hard_limit.level",
        ),
    ],
)
def test_a_policy_is_checked_before_anything_is_asked(kwargs, message):
    with pytest.raises(disk_guard.GuardError, match=message):
        disk_guard.Policy(**kwargs)


@pytest.mark.parametrize(
    "free_gib, factor, declared_rate, default_rate, state",
    [
        (60, 0.5, 5242880.0, 1048576.0, "THROTTLE"),
        (30, 0.1, 1048576.0, 209715.0, "THROTTLE"),  # the exact factor 0.125, in steps of 0.05
        (20, 0.0, 1.0, 1.0, "PAUSE"),
        (101, 1.0, 10485760.0, 2097152.0, "OPEN"),
    ],
)
def test_the_guides_worked_example(free_gib, factor, declared_rate, default_rate, state):
    gib = 1 << 30
    policy = disk_guard.Policy(
        "graded",
        soft_limit={"type": "min_free_bytes", "level": 100 * gib},
        hard_limit={"type": "min_free_bytes", "level": 20 * gib},
    )
    decision, _memory = disk_guard.decide(
        policy, view([volume(1, free_gib * gib, total=1000 * gib)]), 0.0, disk_guard.GuardMemory(), None
    )
    guard = disk_guard.Declaration(
        [{"entity": {"user": "app"}, "producer_byte_rate": 10485760}], default_producer_byte_rate=2097152
    )
    target = spec_of(guard.quotas_at(decision["throttle_factor"]))
    assert (decision["throttle_factor"], decision["state"]) == (factor, state)
    assert (target["user=app"]["producer_byte_rate"], target["user=<default>"]["producer_byte_rate"]) == (
        declared_rate,
        default_rate,
    )
