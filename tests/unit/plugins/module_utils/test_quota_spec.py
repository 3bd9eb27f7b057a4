"""The client quota spec: validation messages, entity conversion and the plan against what Kafka holds."""

import re

import pytest

from ansible_collections.headroom.kafka.plugins.module_utils import quota_spec

ALICE = {"user": "alice"}
DEFAULT_USER = {"user": None}
ALICE_APP = {"user": "alice", "client-id": "app"}
DEFAULT_USER_CLIENT = {"user": None, "client-id": None}
APP = {"client-id": "app"}
IP = {"ip": "10.0.0.1"}
DEFAULT_IP = {"ip": None}


def state(*pairs):
    """{entity_key: (entity, values)} as the module builds it from DescribeClientQuotas."""
    return dict((quota_spec.entity_key(entity), (entity, dict(values))) for entity, values in pairs)


def plan(current, quotas, exclusive=False):
    return quota_spec.plan_changes(state(*current), quota_spec.desired_state(quotas), exclusive)


def summary(changes):
    """(entity description, ops) per change, easy to compare."""
    return [(quota_spec.describe_entity(c["entity"]), c["ops"]) for c in changes]


# -- entities -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "spec, entity, description",
    [
        ({"user": "alice"}, ALICE, "user=alice"),
        ({"user": "<default>"}, DEFAULT_USER, "user=<default>"),
        ({"client_id": "app", "user": "alice"}, ALICE_APP, "user=alice,client_id=app"),
        ({"user": "<default>", "client_id": "<default>"}, DEFAULT_USER_CLIENT, "user=<default>,client_id=<default>"),
        ({"client_id": "app"}, APP, "client_id=app"),
        ({"ip": "10.0.0.1"}, IP, "ip=10.0.0.1"),
        ({"ip": "<default>"}, DEFAULT_IP, "ip=<default>"),
    ],
)
def test_entity_round_trip(spec, entity, description):
    assert quota_spec.entity_from_spec(spec) == entity
    assert quota_spec.entity_to_spec(entity) == spec
    assert quota_spec.describe_entity(entity) == description


def test_entity_key_is_order_independent_and_tells_default_from_names():
    assert quota_spec.entity_key({"user": "a", "client-id": "b"}) == quota_spec.entity_key(
        {"client-id": "b", "user": "a"}
    )
    assert quota_spec.entity_key(DEFAULT_USER) != quota_spec.entity_key({"user": "<default>"})


# -- validation -----------------------------------------------------------------------------------------------------
SPEC_ERRORS = [
    ("not a dict", ["alice"], "quotas[0] must be a dict with an entity (got 'alice')"),
    (
        "no entity",
        [{"producer_byte_rate": 1}],
        "quotas[0].entity must be a non-empty dict with keys user, client_id and/or ip (got None)",
    ),
    ("empty entity", [{"entity": {}}], "quotas[0].entity must be a non-empty dict"),
    (
        "unknown entity type",
        [{"entity": {"group": "g"}}],
        "quotas[0].entity has unknown key(s) group; allowed: user, client_id, ip",
    ),
    (
        "ip with user",
        [{"entity": {"ip": "10.0.0.1", "user": "alice"}}],
        "quotas[0].entity: ip cannot be combined with user or client_id (Kafka refuses such entities)",
    ),
    (
        "ip with client",
        [{"entity": {"ip": "<default>", "client_id": "app"}}],
        "ip cannot be combined with user or client_id",
    ),
    (
        "empty name",
        [{"entity": {"user": ""}}],
        "quotas[0].entity.user must be a non-empty string, or <default> for the default entity (got '')",
    ),
    ("non-string name", [{"entity": {"client_id": 5}}], "quotas[0].entity.client_id must be a non-empty string"),
    (
        "fractional byte rate",
        [{"entity": {"user": "alice"}, "producer_byte_rate": 1024.5}],
        "quotas[0].producer_byte_rate must be a whole number from 1 to 9223372036854775807: "
        "Kafka stores it as a long (got 1024.5)",
    ),
    (
        "fractional connection rate",
        [{"entity": {"ip": "<default>"}, "connection_creation_rate": 2.5}],
        "quotas[0].connection_creation_rate must be a whole number from 1 to 2147483647: "
        "Kafka stores it as an int (got 2.5)",
    ),
    (
        "int overflow",
        [{"entity": {"ip": "<default>"}, "connection_creation_rate": 2**31}],
        "connection_creation_rate must be a whole number from 1 to 2147483647",
    ),
    (
        "long overflow",
        [{"entity": {"user": "a"}, "consumer_byte_rate": 2.0**64}],
        "consumer_byte_rate must be a whole number from 1 to 9223372036854775807",
    ),
    (
        "zero",
        [{"entity": {"user": "a"}, "consumer_byte_rate": 0}],
        "quotas[0].consumer_byte_rate must be greater than 0 (got 0); remove the key to remove the quota",
    ),
    (
        "negative double",
        [{"entity": {"user": "a"}, "request_percentage": -1.5}],
        "quotas[0].request_percentage must be greater than 0 (got -1.5)",
    ),
    (
        "nan",
        [{"entity": {"user": "a"}, "request_percentage": float("nan")}],
        "quotas[0].request_percentage must be a finite number greater than 0 (got nan)",
    ),
    (
        "infinity",
        [{"entity": {"user": "a"}, "producer_byte_rate": float("inf")}],
        "quotas[0].producer_byte_rate must be a finite number greater than 0 (got inf)",
    ),
    (
        "string value",
        [{"entity": {"user": "a"}, "producer_byte_rate": "fast"}],
        "quotas[0].producer_byte_rate must be a number (got 'fast')",
    ),
    (
        "bool value",
        [{"entity": {"user": "a"}, "producer_byte_rate": True}],
        "quotas[0].producer_byte_rate must be a number (got True)",
    ),
    (
        "ip key on user",
        [{"entity": {"user": "a"}, "connection_creation_rate": 10}],
        "quotas[0].connection_creation_rate is not valid for user/client_id entities; "
        "allowed: producer_byte_rate, consumer_byte_rate, request_percentage, controller_mutation_rate",
    ),
    (
        "user key on ip",
        [{"entity": {"ip": "10.0.0.1"}, "producer_byte_rate": 10}],
        "quotas[0].producer_byte_rate is not valid for ip entities; allowed: connection_creation_rate",
    ),
    (
        "unknown key",
        [{"entity": {"user": "a"}, "produce_rate": 10}],
        "quotas[0] has unknown key(s) produce_rate; allowed: entity, state, producer_byte_rate, consumer_byte_rate",
    ),
    (
        "bad state",
        [{"entity": {"user": "a"}, "state": "gone"}],
        "quotas[0].state must be present or absent (got 'gone')",
    ),
    (
        "values with absent",
        [{"entity": {"user": "a"}, "state": "absent", "producer_byte_rate": 10}],
        "quotas[0].producer_byte_rate cannot be given with state absent",
    ),
    (
        "listed twice",
        [{"entity": {"user": "a", "client_id": "b"}}, {"entity": {"client_id": "b", "user": "a"}, "state": "absent"}],
        "quotas[1].entity user=a,client_id=b is listed twice",
    ),
    (
        "second item named",
        [{"entity": {"user": "a"}}, {"entity": {"user": "b"}, "producer_byte_rate": 0.5}],
        "quotas[1].producer_byte_rate must be a whole number",
    ),
]


@pytest.mark.parametrize("quotas, message", [case[1:] for case in SPEC_ERRORS], ids=[case[0] for case in SPEC_ERRORS])
def test_spec_errors(quotas, message):
    with pytest.raises(quota_spec.QuotaSpecError, match=re.escape(message)):
        quota_spec.desired_state(quotas)


@pytest.mark.parametrize(
    "quotas, expected",
    [
        ([], {}),
        (None, {}),
        (
            [{"entity": {"user": "alice"}, "producer_byte_rate": 1024, "request_percentage": 12.5}],
            {quota_spec.entity_key(ALICE): (ALICE, {"producer_byte_rate": 1024.0, "request_percentage": 12.5})},
        ),
        (
            [{"entity": {"user": "alice"}, "producer_byte_rate": 1024.0, "consumer_byte_rate": None}],
            {quota_spec.entity_key(ALICE): (ALICE, {"producer_byte_rate": 1024.0})},
        ),
        (
            [{"entity": {"user": "<default>"}, "state": "absent"}],
            {quota_spec.entity_key(DEFAULT_USER): (DEFAULT_USER, {})},
        ),
        (
            [{"entity": {"ip": "<default>"}, "connection_creation_rate": 2147483647}],
            {quota_spec.entity_key(DEFAULT_IP): (DEFAULT_IP, {"connection_creation_rate": 2147483647.0})},
        ),
        (
            [{"entity": {"user": "a"}, "producer_byte_rate": 9223372036854775807}],
            {quota_spec.entity_key({"user": "a"}): ({"user": "a"}, {"producer_byte_rate": 9.223372036854775807e18})},
        ),
        (
            [{"entity": {"user": "a"}, "request_percentage": 0.001, "controller_mutation_rate": 1e300}],
            {
                quota_spec.entity_key({"user": "a"}): (
                    {"user": "a"},
                    {"request_percentage": 0.001, "controller_mutation_rate": 1e300},
                )
            },
        ),
        (
            [{"entity": {"user": "a"}, "consumer_byte_rate": 2**53 + 1}],
            {quota_spec.entity_key({"user": "a"}): ({"user": "a"}, {"consumer_byte_rate": float(2**53)})},
        ),
    ],
    ids=[
        "empty",
        "none",
        "values as doubles",
        "none values ignored",
        "absent",
        "int maximum",
        "long maximum",
        "doubles unbounded",
        "large int rounds to the double Kafka stores",
    ],
)
def test_desired_state(quotas, expected):
    desired = quota_spec.desired_state(quotas)
    assert desired == expected
    for _entity, values in desired.values():
        assert all(isinstance(v, float) for v in values.values())


# -- plan -----------------------------------------------------------------------------------------------------------
PLANS = [
    (
        "add new entity",
        [],
        [{"entity": {"user": "alice"}, "producer_byte_rate": 1000, "consumer_byte_rate": 2000}],
        False,
        [("user=alice", [("consumer_byte_rate", 2000.0, False), ("producer_byte_rate", 1000.0, False)])],
    ),
    (
        "unchanged int vs stored double",
        [(ALICE, {"producer_byte_rate": 1000.0})],
        [{"entity": {"user": "alice"}, "producer_byte_rate": 1000}],
        False,
        [],
    ),
    (
        "unchanged double",
        [(ALICE, {"request_percentage": 12.5})],
        [{"entity": {"user": "alice"}, "request_percentage": 12.5}],
        False,
        [],
    ),
    (
        "unchanged float vs stored double",
        [(ALICE, {"producer_byte_rate": 1000.0})],
        [{"entity": {"user": "alice"}, "producer_byte_rate": 1000.0}],
        False,
        [],
    ),
    (
        "change one key keeps the other untouched",
        [(ALICE, {"producer_byte_rate": 1000.0, "consumer_byte_rate": 5.0})],
        [{"entity": {"user": "alice"}, "producer_byte_rate": 2000, "consumer_byte_rate": 5}],
        False,
        [("user=alice", [("producer_byte_rate", 2000.0, False)])],
    ),
    (
        "key not given is removed",
        [(ALICE, {"producer_byte_rate": 1000.0, "request_percentage": 50.0})],
        [{"entity": {"user": "alice"}, "producer_byte_rate": 1000}],
        False,
        [("user=alice", [("request_percentage", None, True)])],
    ),
    (
        "change and remove",
        [(ALICE_APP, {"producer_byte_rate": 1.0, "controller_mutation_rate": 3.0})],
        [{"entity": {"user": "alice", "client_id": "app"}, "consumer_byte_rate": 7}],
        False,
        [
            (
                "user=alice,client_id=app",
                [
                    ("consumer_byte_rate", 7.0, False),
                    ("controller_mutation_rate", None, True),
                    ("producer_byte_rate", None, True),
                ],
            )
        ],
    ),
    (
        "tiny double difference is a change",
        [(ALICE, {"request_percentage": 0.1 + 0.2})],
        [{"entity": {"user": "alice"}, "request_percentage": 0.3}],
        False,
        [("user=alice", [("request_percentage", 0.3, False)])],
    ),
    (
        "absent removes every key",
        [(ALICE, {"producer_byte_rate": 1.0, "consumer_byte_rate": 2.0})],
        [{"entity": {"user": "alice"}, "state": "absent"}],
        False,
        [("user=alice", [("consumer_byte_rate", None, True), ("producer_byte_rate", None, True)])],
    ),
    ("absent of unknown entity is a no-op", [], [{"entity": {"user": "ghost"}, "state": "absent"}], False, []),
    (
        "entity with only a client id is not the user",
        [(APP, {"producer_byte_rate": 1.0})],
        [{"entity": {"user": "app"}, "producer_byte_rate": 1}],
        False,
        [("user=app", [("producer_byte_rate", 1.0, False)])],
    ),
    (
        "default user unchanged",
        [(DEFAULT_USER, {"producer_byte_rate": 10.0})],
        [{"entity": {"user": "<default>"}, "producer_byte_rate": 10}],
        False,
        [],
    ),
    (
        "default user and default client change",
        [(DEFAULT_USER_CLIENT, {"consumer_byte_rate": 10.0})],
        [{"entity": {"user": "<default>", "client_id": "<default>"}, "consumer_byte_rate": 20}],
        False,
        [("user=<default>,client_id=<default>", [("consumer_byte_rate", 20.0, False)])],
    ),
    (
        "default ip",
        [],
        [{"entity": {"ip": "<default>"}, "connection_creation_rate": 5}],
        False,
        [("ip=<default>", [("connection_creation_rate", 5.0, False)])],
    ),
    (
        "not exclusive leaves others",
        [(ALICE, {"producer_byte_rate": 1.0}), (IP, {"connection_creation_rate": 3.0})],
        [{"entity": {"user": "bob"}, "producer_byte_rate": 1}],
        False,
        [("user=bob", [("producer_byte_rate", 1.0, False)])],
    ),
    (
        "exclusive removes others",
        [
            (ALICE, {"producer_byte_rate": 1.0}),
            (IP, {"connection_creation_rate": 3.0}),
            (DEFAULT_USER, {"request_percentage": 9.5}),
        ],
        [{"entity": {"user": "alice"}, "producer_byte_rate": 1}],
        True,
        [
            ("user=<default>", [("request_percentage", None, True)]),
            ("ip=10.0.0.1", [("connection_creation_rate", None, True)]),
        ],
    ),
    (
        "exclusive with empty spec clears everything",
        [(ALICE, {"producer_byte_rate": 1.0})],
        [],
        True,
        [("user=alice", [("producer_byte_rate", None, True)])],
    ),
    (
        "exclusive and nothing to do",
        [(ALICE, {"producer_byte_rate": 1.0})],
        [{"entity": {"user": "alice"}, "producer_byte_rate": 1.0}],
        True,
        [],
    ),
    (
        "changes ordered: users, clients, ips; default first; an entity before its combinations",
        [],
        [
            {"entity": {"user": "zed"}, "producer_byte_rate": 1},
            {"entity": {"user": "<default>"}, "producer_byte_rate": 1},
            {"entity": {"ip": "10.0.0.1"}, "connection_creation_rate": 1},
            {"entity": {"user": "amy", "client_id": "x"}, "producer_byte_rate": 1},
            {"entity": {"user": "amy"}, "producer_byte_rate": 1},
            {"entity": {"client_id": "c"}, "producer_byte_rate": 1},
            {"entity": {"user": "amy", "client_id": "<default>"}, "producer_byte_rate": 1},
            {"entity": {"client_id": "<default>"}, "producer_byte_rate": 1},
            {"entity": {"user": "<default>", "client_id": "<default>"}, "producer_byte_rate": 1},
            {"entity": {"ip": "<default>"}, "connection_creation_rate": 1},
        ],
        False,
        [
            ("user=<default>", [("producer_byte_rate", 1.0, False)]),
            ("user=<default>,client_id=<default>", [("producer_byte_rate", 1.0, False)]),
            ("user=amy", [("producer_byte_rate", 1.0, False)]),
            ("user=amy,client_id=<default>", [("producer_byte_rate", 1.0, False)]),
            ("user=amy,client_id=x", [("producer_byte_rate", 1.0, False)]),
            ("user=zed", [("producer_byte_rate", 1.0, False)]),
            ("client_id=<default>", [("producer_byte_rate", 1.0, False)]),
            ("client_id=c", [("producer_byte_rate", 1.0, False)]),
            ("ip=<default>", [("connection_creation_rate", 1.0, False)]),
            ("ip=10.0.0.1", [("connection_creation_rate", 1.0, False)]),
        ],
    ),
]


@pytest.mark.parametrize(
    "current, quotas, exclusive, expected", [case[1:] for case in PLANS], ids=[case[0] for case in PLANS]
)
def test_plan_changes(current, quotas, exclusive, expected):
    assert summary(plan(current, quotas, exclusive)) == expected


def test_plan_reports_before_and_after():
    changes = plan(
        [(ALICE, {"producer_byte_rate": 1000.0, "request_percentage": 50.0})],
        [
            {"entity": {"user": "alice"}, "producer_byte_rate": 2000},
            {"entity": {"ip": "<default>"}, "connection_creation_rate": 4},
        ],
    )
    assert [(c["entity"], c["before"], c["after"]) for c in changes] == [
        (ALICE, {"producer_byte_rate": 1000.0, "request_percentage": 50.0}, {"producer_byte_rate": 2000.0}),
        (DEFAULT_IP, {}, {"connection_creation_rate": 4.0}),
    ]


def test_plan_does_not_mutate_its_inputs():
    current = state((ALICE, {"producer_byte_rate": 1.0}))
    desired = quota_spec.desired_state([{"entity": {"user": "alice"}, "consumer_byte_rate": 2}])
    snapshot = (repr(current), repr(desired))
    quota_spec.plan_changes(current, desired, exclusive=True)
    assert (repr(current), repr(desired)) == snapshot


def test_plan_is_idempotent_once_applied():
    quotas = [
        {"entity": {"user": "u{0}".format(i)}, "producer_byte_rate": 1000 + i, "consumer_byte_rate": 2000.0}
        for i in range(50)
    ]
    changes = plan([], quotas)
    applied = [(c["entity"], c["after"]) for c in changes]
    assert len(changes) == 50
    assert plan(applied, quotas, exclusive=True) == []


@pytest.mark.parametrize(
    "values, expected",
    [
        (
            {"producer_byte_rate": 1000.0, "request_percentage": 50.0, "controller_mutation_rate": 2.5},
            {"controller_mutation_rate": 2.5, "producer_byte_rate": 1000, "request_percentage": 50.0},
        ),
        ({"connection_creation_rate": 7.0}, {"connection_creation_rate": 7}),
        ({"consumer_byte_rate": 10.5}, {"consumer_byte_rate": 10.5}),
        ({}, {}),
    ],
)
def test_for_output(values, expected):
    output = quota_spec.for_output(values)
    assert output == expected
    assert [type(v) for v in output.values()] == [type(v) for v in expected.values()]
