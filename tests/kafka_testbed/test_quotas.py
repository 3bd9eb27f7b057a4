"""Client quotas on the wire (AlterClientQuotas 49, DescribeClientQuotas 48), pinned to Kafka 4.x.

Kafka's rules (ClientQuotaControlManager, ClientQuotasImage.describe): every validation error is INVALID_REQUEST (42)
on the entry of the offending entity, the first bad op aborts that entity only, ``remove`` ops are not validated,
``validate_only`` writes nothing, filter errors are top-level with ``entries`` null, and the default entity is the
one whose ``entity_name`` is null. Quotas live in the cluster metadata: any broker answers for all of them and they
survive restarts.

confluent-kafka has no client-quota API, so these tests use kafka-python's protocol classes, sent with the raw client
at exact versions and through KafkaAdminClient's own connections.
"""

import pytest
from clients import RawClient, kafka_python_config, settled
from kafka import KafkaAdminClient
from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest, DescribeClientQuotasRequest

from kafka_testbed.model import wire
from kafka_testbed.testing import ClusterFactory

NONE, UNSUPPORTED_VERSION, INVALID_REQUEST = 0, 35, 42
EXACT, DEFAULT, SPECIFIED = 0, 1, 2
IP_COMBINED = "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"


@pytest.fixture(scope="module")
def cluster(kafka_cluster_root):
    factory = ClusterFactory(kafka_cluster_root)
    yield factory(3)
    factory.close()


def _entity_key(entity):
    """An entity of a request or response as a hashable, order-free key: ((type, name), ...) sorted by type."""
    return tuple(sorted(((e.entity_type, e.entity_name) for e in entity), key=lambda pair: pair[0]))


def _op(op):
    """(key, value) sets; (key, None) removes; (key, value, remove) spells both out."""
    key, value, remove = op if len(op) == 3 else (op[0], op[1], op[1] is None)
    return {"key": key, "value": float(value or 0.0), "remove": remove}


def alter_request(entries, validate_only=False, version=1):
    return wire.build(
        AlterClientQuotasRequest,
        version,
        {
            "validate_only": validate_only,
            "entries": [
                {"entity": [{"entity_type": t, "entity_name": n} for t, n in entity], "ops": [_op(op) for op in ops]}
                for entity, ops in entries
            ],
        },
    )


def describe_request(components=(), strict=False, version=1):
    return wire.build(
        DescribeClientQuotasRequest,
        version,
        {"strict": strict, "components": [{"entity_type": t, "match_type": m, "match": n} for t, m, n in components]},
    )


def alter(cluster, entries, validate_only=False, node_id=1, version=1):
    """{entity key: (error code, message)} for ``entries`` = [(entity pairs, ops)]."""
    with RawClient.to_broker(cluster, node_id) as client:
        response = client.request(alter_request(entries, validate_only, version), version)
    return {_entity_key(e.entity): (e.error_code, e.error_message) for e in response.entries}


def describe(cluster, components=(), strict=False, node_id=1, version=1):
    """(error code, message, {entity key: {quota key: value}} or None)."""
    with RawClient.to_broker(cluster, node_id) as client:
        response = client.request(describe_request(components, strict, version), version)
    entries = None
    if response.entries is not None:
        entries = {_entity_key(e.entity): {v.key: v.value for v in e.values} for e in response.entries}
    return response.error_code, response.error_message, entries


def key(*pairs):
    return tuple(sorted(pairs, key=lambda pair: pair[0]))


def quotas_of(cluster, *pairs, node_id=1):
    """The stored quotas of exactly this entity ({} if none)."""
    components = [(t, EXACT if n is not None else DEFAULT, n) for t, n in pairs]
    code, _ignored, entries = describe(cluster, components, strict=True, node_id=node_id)
    assert code == NONE
    return entries.get(key(*pairs), {})


def assert_stored(cluster, *pairs, expected, node_id=1):
    """Brokers apply committed quotas asynchronously: poll until the expected quotas show (or time runs out)."""
    assert settled(lambda: quotas_of(cluster, *pairs, node_id=node_id), expected) == expected


def reset(cluster):
    """Remove every stored quota (remove ops on everything DescribeClientQuotas lists)."""
    code, _ignored, entries = describe(cluster)
    assert code == NONE
    if entries:
        results = alter(cluster, [(list(entity), [(k, None) for k in values]) for entity, values in entries.items()])
        assert all(result == (NONE, None) for result in results.values())
    assert settled(lambda: describe(cluster)[2], {}) == {}


# -- AlterClientQuotas validation -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "entity, ops, message",
    [
        pytest.param([], [("producer_byte_rate", 1024)], "Invalid empty client quota entity", id="empty-entity"),
        pytest.param(
            [("group", "g1")],
            [("producer_byte_rate", 1024)],
            "Unhandled client quota entity type: group",
            id="unknown-type",
        ),
        pytest.param([("user", "")], [("producer_byte_rate", 1024)], "Empty user not supported", id="empty-user"),
        pytest.param(
            [("client-id", "")], [("producer_byte_rate", 1024)], "Empty client-id not supported", id="empty-client-id"
        ),
        pytest.param([("ip", "")], [("connection_creation_rate", 10)], "Empty ip not supported", id="empty-ip"),
        pytest.param(
            [("ip", "10.0.0.1"), ("user", "v-user")], [("producer_byte_rate", 1024)], IP_COMBINED, id="ip-with-user"
        ),
        pytest.param(
            [("client-id", "v-app"), ("ip", "10.0.0.1")],
            [("producer_byte_rate", 1024)],
            IP_COMBINED,
            id="ip-with-client-id",
        ),
        pytest.param(
            [("ip", "300.1.2.3")],
            [("connection_creation_rate", 10)],
            "300.1.2.3 is not a valid IP or resolvable host.",
            id="bad-ip",
        ),
        pytest.param(
            [("ip", "no-such-host.invalid")],
            [("connection_creation_rate", 10)],
            "no-such-host.invalid is not a valid IP or resolvable host.",
            id="unresolvable-host",
        ),
        pytest.param(
            [("user", "v-user")],
            [("connection_creation_rate", 10)],
            "Invalid configuration key connection_creation_rate",
            id="ip-key-on-user",
        ),
        pytest.param(
            [("ip", "10.0.0.1")],
            [("producer_byte_rate", 1024)],
            "Invalid configuration key producer_byte_rate",
            id="user-key-on-ip",
        ),
        pytest.param(
            [("client-id", "v-app")], [("not_a_quota", 1)], "Invalid configuration key not_a_quota", id="unknown-key"
        ),
        pytest.param(
            [("user", "v-user")],
            [("producer_byte_rate", 0)],
            "Quota producer_byte_rate must be greater than 0",
            id="zero",
        ),
        pytest.param(
            [("client-id", "v-app")],
            [("request_percentage", -5)],
            "Quota request_percentage must be greater than 0",
            id="negative-double",
        ),
        pytest.param(
            [("user", "v-user")],
            [("consumer_byte_rate", 1.5)],
            "consumer_byte_rate cannot be a fractional value.",
            id="fractional-long",
        ),
        pytest.param(
            [("ip", "10.0.0.1")],
            [("connection_creation_rate", 2.5)],
            "connection_creation_rate cannot be a fractional value.",
            id="fractional-int",
        ),
        pytest.param(
            [("user", "v-user")],
            [("producer_byte_rate", 1e19)],
            "Proposed value for producer_byte_rate is too large for a LONG.",
            id="long-overflow",
        ),
        pytest.param(
            [("ip", "10.0.0.1")],
            [("connection_creation_rate", 3e9)],
            "Proposed value for connection_creation_rate is too large for an INT.",
            id="int-overflow",
        ),
        pytest.param(
            [("user", "v-user")],
            [("producer_byte_rate", 1024), ("producer_byte_rate", 2048)],
            "Ignoring duplicate entity ClientQuotaEntity(entries={user=v-user})",
            id="duplicate-key",
        ),
    ],
)
@pytest.mark.parametrize("version", [0, 1])
def test_alter_validation_error_on_the_entry(cluster, entity, ops, message, version):
    """Each rule answers INVALID_REQUEST with Kafka's message on that entity's entry, and nothing is stored."""
    results = alter(cluster, [(entity, ops)], version=version)
    assert results == {key(*entity): (INVALID_REQUEST, message)}
    if len(entity) == 1 and entity[0][0] in ("user", "client-id", "ip") and entity[0][1]:
        assert_stored(cluster, *entity, expected={})


@pytest.mark.parametrize(
    "entity, ops, stored",
    [
        pytest.param(
            [("user", "ok-user")],
            [("producer_byte_rate", 1024), ("consumer_byte_rate", 2048)],
            {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2048.0},
            id="user-byte-rates",
        ),
        pytest.param(
            [("client-id", "ok-app")],
            [("request_percentage", 12.5), ("controller_mutation_rate", 0.5)],
            {"request_percentage": 12.5, "controller_mutation_rate": 0.5},
            id="client-id-doubles",
        ),
        pytest.param(
            [("client-id", "ok-app"), ("user", "ok-user")],
            [("producer_byte_rate", 4096)],
            {"producer_byte_rate": 4096.0},
            id="user-and-client-id",
        ),
        pytest.param(
            [("ip", "10.9.8.7")], [("connection_creation_rate", 30)], {"connection_creation_rate": 30.0}, id="ip"
        ),
        pytest.param(
            [("ip", "::1")], [("connection_creation_rate", 31)], {"connection_creation_rate": 31.0}, id="ipv6"
        ),
        pytest.param(
            [("ip", "localhost")],
            [("connection_creation_rate", 32)],
            {"connection_creation_rate": 32.0},
            id="resolvable-host",
        ),
        pytest.param(
            [("user", "ok-max")], [("producer_byte_rate", 9e18)], {"producer_byte_rate": 9e18}, id="large-long"
        ),
    ],
)
def test_alter_accepts_and_describe_returns(cluster, entity, ops, stored):
    assert alter(cluster, [(entity, ops)]) == {key(*entity): (NONE, None)}
    assert_stored(cluster, *entity, expected=stored)
    assert alter(cluster, [(entity, [(k, None) for k, _ignored in ops])]) == {key(*entity): (NONE, None)}
    assert_stored(cluster, *entity, expected={})


def test_repeated_entity_type_keeps_the_last_name(cluster):
    """AlterClientQuotasRequest.entries() puts the parts in a map: a repeated type silently keeps its last name."""
    results = alter(cluster, [([("user", "first"), ("user", "last")], [("producer_byte_rate", 7)])])
    assert results == {key(("user", "last")): (NONE, None)}
    assert_stored(cluster, ("user", "last"), expected={"producer_byte_rate": 7.0})
    assert_stored(cluster, ("user", "first"), expected={})
    alter(cluster, [([("user", "last")], [("producer_byte_rate", None)])])


def test_one_bad_op_leaves_the_entity_unchanged_while_other_entries_apply(cluster):
    bad = [("user", "atomic-bad")]
    good = [("user", "atomic-good")]
    assert alter(cluster, [(bad, [("consumer_byte_rate", 500)])]) == {key(*bad): (NONE, None)}
    results = alter(
        cluster,
        [
            (good, [("producer_byte_rate", 1000)]),
            (bad, [("consumer_byte_rate", 2000), ("producer_byte_rate", -1)]),
        ],
    )
    assert results == {
        key(*good): (NONE, None),
        key(*bad): (INVALID_REQUEST, "Quota producer_byte_rate must be greater than 0"),
    }
    assert_stored(cluster, *good, expected={"producer_byte_rate": 1000.0})
    assert_stored(cluster, *bad, expected={"consumer_byte_rate": 500.0})
    alter(cluster, [(good, [("producer_byte_rate", None)]), (bad, [("consumer_byte_rate", None)])])


def test_remove_ops_are_not_validated(cluster):
    """A remove op is neither checked for its key nor its value, and removing an absent key is a no-op."""
    entity = [("user", "remover")]
    alter(cluster, [(entity, [("producer_byte_rate", 1000), ("consumer_byte_rate", 2000)])])
    results = alter(
        cluster,
        [
            (
                entity,
                [
                    ("producer_byte_rate", -1.5, True),
                    ("not_a_quota", None),
                    ("connection_creation_rate", None),
                ],
            )
        ],
    )
    assert results == {key(*entity): (NONE, None)}
    assert_stored(cluster, *entity, expected={"consumer_byte_rate": 2000.0})
    never = [("client-id", "never-set")]
    assert alter(cluster, [(never, [("request_percentage", None)])]) == {key(*never): (NONE, None)}
    assert_stored(cluster, *never, expected={})
    alter(cluster, [(entity, [("consumer_byte_rate", None)])])
    assert_stored(cluster, *entity, expected={})


def test_remove_ops_do_not_skip_entity_validation(cluster):
    """The entity itself is still validated before any op."""
    results = alter(cluster, [([("group", "g1")], [("producer_byte_rate", None)])])
    assert results == {key(("group", "g1")): (INVALID_REQUEST, "Unhandled client quota entity type: group")}


def test_validate_only_runs_every_check_and_writes_nothing(cluster):
    good = [("user", "dry-run")]
    bad = [("client-id", "dry-run")]
    results = alter(
        cluster, [(good, [("producer_byte_rate", 1024)]), (bad, [("consumer_byte_rate", 0.25)])], validate_only=True
    )
    assert results == {
        key(*good): (NONE, None),
        key(*bad): (INVALID_REQUEST, "consumer_byte_rate cannot be a fractional value."),
    }
    assert_stored(cluster, *good, expected={})
    alter(cluster, [(good, [("producer_byte_rate", 1024)])])
    assert alter(cluster, [(good, [("producer_byte_rate", None)])], validate_only=True) == {key(*good): (NONE, None)}
    assert_stored(cluster, *good, expected={"producer_byte_rate": 1024.0})
    alter(cluster, [(good, [("producer_byte_rate", None)])])


# -- DescribeClientQuotas -------------------------------------------------------------------------------------------

FILTER_ENTITIES = {
    "alice": [("user", "alice")],
    "alice/app": [("user", "alice"), ("client-id", "app")],
    "alice/<default>": [("user", "alice"), ("client-id", None)],
    "<default>": [("user", None)],
    "<default>/<default>": [("user", None), ("client-id", None)],
    "client app": [("client-id", "app")],
    "client <default>": [("client-id", None)],
    "ip": [("ip", "10.1.2.3")],
    "ip <default>": [("ip", None)],
}


@pytest.fixture
def filter_quotas(cluster):
    reset(cluster)
    entries = [
        (entity, [("connection_creation_rate" if entity[0][0] == "ip" else "request_percentage", 10 + index)])
        for index, entity in enumerate(FILTER_ENTITIES.values())
    ]
    assert set(alter(cluster, entries).values()) == {(NONE, None)}
    keys = {name: key(*entity) for name, entity in FILTER_ENTITIES.items()}
    assert settled(lambda: set(describe(cluster)[2]), set(keys.values())) == set(keys.values())
    yield keys
    reset(cluster)


@pytest.mark.parametrize(
    "components, strict, expected",
    [
        pytest.param([], False, list(FILTER_ENTITIES), id="no-filter"),
        pytest.param([], True, [], id="no-filter-strict"),
        pytest.param([("user", EXACT, "alice")], False, ["alice", "alice/app", "alice/<default>"], id="exact"),
        pytest.param([("user", EXACT, "alice")], True, ["alice"], id="exact-strict"),
        pytest.param([("user", DEFAULT, None)], False, ["<default>", "<default>/<default>"], id="default"),
        pytest.param([("user", DEFAULT, None)], True, ["<default>"], id="default-strict"),
        pytest.param(
            [("user", SPECIFIED, None)],
            False,
            ["alice", "alice/app", "alice/<default>", "<default>", "<default>/<default>"],
            id="specified-includes-default",
        ),
        pytest.param([("user", SPECIFIED, None)], True, ["alice", "<default>"], id="specified-strict"),
        pytest.param(
            [("user", EXACT, "alice"), ("client-id", DEFAULT, None)], True, ["alice/<default>"], id="exact-and-default"
        ),
        pytest.param(
            [("user", SPECIFIED, None), ("client-id", SPECIFIED, None)],
            True,
            ["alice/app", "alice/<default>", "<default>/<default>"],
            id="two-specified",
        ),
        pytest.param([("client-id", EXACT, "app")], False, ["alice/app", "client app"], id="client-id-exact"),
        pytest.param([("client-id", DEFAULT, None)], True, ["client <default>"], id="client-id-default-strict"),
        pytest.param([("ip", SPECIFIED, None)], False, ["ip", "ip <default>"], id="ip-specified"),
        pytest.param([("ip", DEFAULT, None)], False, ["ip <default>"], id="ip-default"),
        pytest.param([("user", EXACT, "nobody")], False, [], id="no-match"),
    ],
)
def test_describe_filters(cluster, filter_quotas, components, strict, expected):
    code, message, entries = describe(cluster, components, strict)
    assert (code, message) == (NONE, "")
    assert set(entries) == {filter_quotas[name] for name in expected}
    assert len(entries) == len(expected)


def test_default_entities_have_a_null_name(cluster, filter_quotas):
    """The default entity is sent and described with ``entity_name`` null, never a "<default>" string."""
    code, _ignored, entries = describe(cluster, [("user", DEFAULT, None), ("client-id", DEFAULT, None)], strict=True)
    assert code == NONE
    assert entries == {(("client-id", None), ("user", None)): {"request_percentage": 14.0}}
    assert filter_quotas["<default>"] == (("user", None),)
    literal = [("user", "<default>")]
    assert_stored(cluster, *literal, expected={})


@pytest.mark.parametrize(
    "components, code, message",
    [
        pytest.param([("", EXACT, "x")], INVALID_REQUEST, "Invalid empty entity type.", id="empty-type"),
        pytest.param([("group", EXACT, "x")], UNSUPPORTED_VERSION, "Unsupported entity type group", id="unknown-type"),
        pytest.param(
            [("user", EXACT, "a"), ("user", SPECIFIED, None)],
            INVALID_REQUEST,
            "Entity type user cannot appear more than once in the filter.",
            id="duplicate-type",
        ),
        pytest.param(
            [("user", EXACT, None)],
            INVALID_REQUEST,
            "Request specified MATCH_TYPE_EXACT, but set match string to null.",
            id="exact-without-match",
        ),
        pytest.param(
            [("user", DEFAULT, "a")],
            INVALID_REQUEST,
            "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
            id="default-with-match",
        ),
        pytest.param(
            [("client-id", SPECIFIED, "a")],
            INVALID_REQUEST,
            "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.",
            id="specified-with-match",
        ),
        pytest.param([("user", 7, None)], INVALID_REQUEST, "Unknown match type 7", id="unknown-match-type"),
        pytest.param(
            [("ip", SPECIFIED, None), ("user", EXACT, "a")],
            INVALID_REQUEST,
            "Invalid entity filter component combination. IP filter component should not be used with user or "
            "clientId filter component.",
            id="ip-with-user",
        ),
    ],
)
@pytest.mark.parametrize("version", [0, 1])
def test_describe_filter_errors_are_top_level(cluster, components, code, message, version):
    assert describe(cluster, components, version=version) == (code, message, None)


# -- Where quotas live ----------------------------------------------------------------------------------------------


def test_quotas_are_cluster_wide(cluster):
    entity = [("user", "everywhere"), ("client-id", "svc")]
    assert alter(cluster, [(entity, [("producer_byte_rate", 5000)])], node_id=1) == {key(*entity): (NONE, None)}
    for node_id in (2, 3):
        assert_stored(cluster, *entity, node_id=node_id, expected={"producer_byte_rate": 5000.0})
    assert alter(cluster, [(entity, [("producer_byte_rate", None)])], node_id=3) == {key(*entity): (NONE, None)}
    assert_stored(cluster, *entity, node_id=1, expected={})


def test_quotas_survive_restarting_every_broker(cluster):
    entries = [
        ([("user", "durable")], [("producer_byte_rate", 1048576)]),
        ([("user", None)], [("consumer_byte_rate", 2097152), ("request_percentage", 50)]),
        ([("ip", None)], [("connection_creation_rate", 100)]),
    ]
    assert set(alter(cluster, entries).values()) == {(NONE, None)}
    for entry in cluster.info["brokers"]:
        cluster.stop(entry["id"])
    # Controllers first: a broker is up once the controllers have registered it.
    for entry in sorted(cluster.info["brokers"], key=lambda e: "broker" in e["roles"]):
        cluster.start(entry["id"])
    assert_stored(cluster, ("user", "durable"), node_id=2, expected={"producer_byte_rate": 1048576.0})
    assert_stored(
        cluster, ("user", None), node_id=3, expected={"consumer_byte_rate": 2097152.0, "request_percentage": 50.0}
    )
    assert_stored(cluster, ("ip", None), node_id=1, expected={"connection_creation_rate": 100.0})
    reset(cluster)


# -- Through kafka-python's admin client ----------------------------------------------------------------------------


def _admin_send(admin, request, node_id=None):
    """Send a protocol object over KafkaAdminClient's own connections (the version is negotiated)."""

    async def send():
        return await admin._manager.send(request, node_id=node_id)  # pylint: disable=protected-access

    return admin._manager.run(send)  # pylint: disable=protected-access


def test_kafka_python_admin_client_connections(cluster):
    """The same rules through KafkaAdminClient's connection manager, which negotiates the newest version (v1)."""
    entry = AlterClientQuotasRequest.EntryData
    good = entry(
        entity=[entry.EntityData(entity_type="user", entity_name="kp-user")],
        ops=[entry.OpData(key="producer_byte_rate", value=8192.0, remove=False)],
    )
    bad = entry(
        entity=[entry.EntityData(entity_type="user", entity_name=None)],
        ops=[entry.OpData(key="producer_byte_rate", value=0.5, remove=False)],
    )
    component = DescribeClientQuotasRequest.ComponentData
    reset(cluster)
    admin = KafkaAdminClient(**kafka_python_config(cluster))
    try:
        response = _admin_send(admin, AlterClientQuotasRequest(entries=[good, bad], validate_only=False), node_id=2)
        assert response.API_VERSION == 1
        results = {_entity_key(e.entity): (e.error_code, e.error_message) for e in response.entries}
        assert results == {
            (("user", "kp-user"),): (NONE, None),
            (("user", None),): (INVALID_REQUEST, "producer_byte_rate cannot be a fractional value."),
        }
        expected = {(("user", "kp-user"),): {"producer_byte_rate": 8192.0}}

        def described():
            response = _admin_send(
                admin,
                DescribeClientQuotasRequest(
                    components=[component(entity_type="user", match_type=SPECIFIED, match=None)], strict=False
                ),
                node_id=3,
            )
            assert (response.error_code, response.error_message) == (NONE, "")
            return {_entity_key(e.entity): {v.key: v.value for v in e.values} for e in response.entries}

        assert settled(described, expected) == expected
        response = _admin_send(
            admin,
            DescribeClientQuotasRequest(
                components=[component(entity_type="user", match_type=EXACT, match=None)], strict=False
            ),
        )
        assert (response.error_code, response.entries) == (INVALID_REQUEST, None)
    finally:
        admin.close()
    reset(cluster)
