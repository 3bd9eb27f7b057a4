"""Table tests of kafka_testbed.model.client_quotas against Kafka 4.x's ClientQuotaControlManager and
ClientQuotasImage."""

import copy
import json
import math

import pytest

from kafka_testbed.model import client_quotas

INVALID = client_quotas.INVALID_REQUEST
EXACT, DEFAULT, SPECIFIED = (
    client_quotas.MATCH_TYPE_EXACT,
    client_quotas.MATCH_TYPE_DEFAULT,
    client_quotas.MATCH_TYPE_SPECIFIED,
)
IP_COMBINATION = "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"


def entry(entity, *ops):
    """An AlterClientQuotas entry as alter() takes it."""
    return {"entity": list(entity), "ops": list(ops)}


def put(key, value):
    """A set op."""
    return (key, value, False)


def remove(key, value=0.0):
    """A remove op (its value is ignored)."""
    return (key, value, True)


def alter_one(quotas, entity, *ops, validate_only=False, **kwargs):
    """Alter a single entity; return its (error_code, error_message)."""
    return client_quotas.alter(quotas, [entry(entity, *ops)], validate_only, **kwargs)[0]


# ---------------------------------------------------------------------------------------------------------------------
# constants


def test_constants():
    """Match types, error codes and QuotaConfig's keys with their ConfigDef types."""
    assert (client_quotas.MATCH_TYPE_EXACT, client_quotas.MATCH_TYPE_DEFAULT, client_quotas.MATCH_TYPE_SPECIFIED) == (
        0,
        1,
        2,
    )
    assert (client_quotas.NONE, client_quotas.UNSUPPORTED_VERSION, client_quotas.INVALID_REQUEST) == (0, 35, 42)
    user_keys = {
        "producer_byte_rate": "long",
        "consumer_byte_rate": "long",
        "request_percentage": "double",
        "controller_mutation_rate": "double",
    }
    assert client_quotas.QUOTA_KEYS == {
        "user": user_keys,
        "client-id": user_keys,
        "ip": {"connection_creation_rate": "int"},
    }


# ---------------------------------------------------------------------------------------------------------------------
# store keys


@pytest.mark.parametrize(
    "entity, key",
    [
        ({"user": "alice"}, "user=alice"),
        ({"user": None}, "user=<default>"),
        ({"user": "alice", "client-id": None}, "client-id=<default>|user=alice"),
        ({"client-id": None, "user": "alice"}, "client-id=<default>|user=alice"),
        ({"ip": "10.0.0.1"}, "ip=10.0.0.1"),
        ({"ip": "::1"}, "ip=::1"),
        ({"user": "<default>"}, "user=%3Cdefault%3E"),
        ({"user": "a|b=c%d"}, "user=a%7Cb%3Dc%25d"),
        ({"user": "CN=x,O=y"}, "user=CN%3Dx,O%3Dy"),
        ({"user": "bob@EXAMPLE.COM"}, "user=bob@EXAMPLE.COM"),
        ({"user": "zoë ünïcode"}, "user=zo%C3%AB%20%C3%BCn%C3%AFcode"),
        ({}, ""),
    ],
)
def test_entity_key_round_trip(entity, key):
    """Store keys are canonical, JSON-safe and parse back to the entity."""
    assert client_quotas.entity_key(entity) == key
    assert client_quotas.parse_entity_key(key) == entity
    assert json.loads(json.dumps({key: {}})) == {key: {}}


def test_entity_key_distinguishes_default_from_literal_name():
    """The default entity and a user literally named <default> get different keys."""
    assert client_quotas.entity_key({"user": None}) != client_quotas.entity_key({"user": "<default>"})


@pytest.mark.parametrize("key", ["user", "=alice", "user=a|user=b", "user=a|", 7])
def test_parse_entity_key_rejects_malformed(key):
    """Malformed keys raise ValueError."""
    with pytest.raises(ValueError):
        client_quotas.parse_entity_key(key)


# ---------------------------------------------------------------------------------------------------------------------
# AlterClientQuotas: one entry, validation (ClientQuotaControlManager)

ALTER_ERRORS = [
    # validateEntity
    ("empty entity", [], [put("producer_byte_rate", 1024)], "Invalid empty client quota entity"),
    ("unknown type", [("foo", "bar")], [put("producer_byte_rate", 1024)], "Unhandled client quota entity type: foo"),
    (
        "unknown type with user",
        [("user", "a"), ("group", "g")],
        [put("producer_byte_rate", 1024)],
        "Unhandled client quota entity type: group",
    ),
    ("empty type", [("", "x")], [put("producer_byte_rate", 1024)], "Unhandled client quota entity type: "),
    ("empty user", [("user", "")], [put("producer_byte_rate", 1024)], "Empty user not supported"),
    ("empty client-id", [("client-id", "")], [put("producer_byte_rate", 1024)], "Empty client-id not supported"),
    ("empty ip", [("ip", "")], [put("connection_creation_rate", 5)], "Empty ip not supported"),
    ("empty name even for remove", [("user", "")], [remove("producer_byte_rate")], "Empty user not supported"),
    # HashMap order decides between two entity errors: "user" iterates before "foo", "x" before "user"
    ("map order user first", [("foo", "x"), ("user", "")], [], "Empty user not supported"),
    ("map order x first", [("x", "1"), ("user", "")], [], "Unhandled client quota entity type: x"),
    # configKeysForEntityType
    ("ip with user", [("user", "a"), ("ip", "1.2.3.4")], [put("producer_byte_rate", 1024)], IP_COMBINATION),
    (
        "ip with client-id",
        [("client-id", "c"), ("ip", "1.2.3.4")],
        [put("connection_creation_rate", 5)],
        IP_COMBINATION,
    ),
    ("default ip with default user", [("ip", None), ("user", None)], [], IP_COMBINATION),
    (
        "ip not an address",
        [("ip", "example.invalid")],
        [put("connection_creation_rate", 5)],
        "example.invalid is not a valid IP or resolvable host.",
    ),
    (
        "ip octet too large",
        [("ip", "999.1.1.1")],
        [put("connection_creation_rate", 5)],
        "999.1.1.1 is not a valid IP or resolvable host.",
    ),
    (
        "ip five parts",
        [("ip", "1.2.3.4.5")],
        [put("connection_creation_rate", 5)],
        "1.2.3.4.5 is not a valid IP or resolvable host.",
    ),
    (
        "ip hex form",
        [("ip", "0x7f.0.0.1")],
        [put("connection_creation_rate", 5)],
        "0x7f.0.0.1 is not a valid IP or resolvable host.",
    ),
    (
        "ip v4 in brackets",
        [("ip", "[1.2.3.4]")],
        [put("connection_creation_rate", 5)],
        "[1.2.3.4] is not a valid IP or resolvable host.",
    ),
    (
        "ip bad v6",
        [("ip", "::1.2.3")],
        [put("connection_creation_rate", 5)],
        "::1.2.3 is not a valid IP or resolvable host.",
    ),
    (
        "ip trailing dot",
        [("ip", "1.2.3.")],
        [put("connection_creation_rate", 5)],
        "1.2.3. is not a valid IP or resolvable host.",
    ),
    (
        "ip short form too large",
        [("ip", "1.2.65536")],
        [put("connection_creation_rate", 5)],
        "1.2.65536 is not a valid IP or resolvable host.",
    ),
    (
        "ip checked even for remove",
        [("ip", "nope")],
        [remove("connection_creation_rate")],
        "nope is not a valid IP or resolvable host.",
    ),
    # validateQuotaKeyValue: key
    (
        "ip key on user",
        [("user", "a")],
        [put("connection_creation_rate", 5)],
        "Invalid configuration key connection_creation_rate",
    ),
    (
        "user key on ip",
        [("ip", "1.2.3.4")],
        [put("producer_byte_rate", 1024)],
        "Invalid configuration key producer_byte_rate",
    ),
    ("unknown key", [("client-id", "c")], [put("foobar", 1.0)], "Invalid configuration key foobar"),
    (
        "broker key",
        [("user", "a")],
        [put("leader.replication.throttled.rate", 1.0)],
        "Invalid configuration key leader.replication.throttled.rate",
    ),
    (
        "scram mechanism is not a quota",
        [("user", "a")],
        [put("SCRAM-SHA-256", 1.0)],
        "Invalid configuration key SCRAM-SHA-256",
    ),
    ("key checked before value", [("user", "a")], [put("foobar", 0.0)], "Invalid configuration key foobar"),
    # validateQuotaKeyValue: value <= 0
    (
        "zero long",
        [("client-id", "c")],
        [put("producer_byte_rate", 0.0)],
        "Quota producer_byte_rate must be greater than 0",
    ),
    (
        "negative long",
        [("client-id", "c")],
        [put("consumer_byte_rate", -2.0)],
        "Quota consumer_byte_rate must be greater than 0",
    ),
    (
        "negative double",
        [("user", None)],
        [put("request_percentage", -0.5)],
        "Quota request_percentage must be greater than 0",
    ),
    (
        "negative zero",
        [("user", None)],
        [put("controller_mutation_rate", -0.0)],
        "Quota controller_mutation_rate must be greater than 0",
    ),
    (
        "zero int",
        [("ip", None)],
        [put("connection_creation_rate", 0)],
        "Quota connection_creation_rate must be greater than 0",
    ),
    (
        "minus infinity",
        [("user", "a")],
        [put("request_percentage", -math.inf)],
        "Quota request_percentage must be greater than 0",
    ),
    # validateQuotaKeyValue: integral types
    (
        "fractional long",
        [("client-id", "c")],
        [put("consumer_byte_rate", 2.245)],
        "consumer_byte_rate cannot be a fractional value.",
    ),
    (
        "fractional long below",
        [("user", "a")],
        [put("producer_byte_rate", 2.9999999)],
        "producer_byte_rate cannot be a fractional value.",
    ),
    (
        "fractional int",
        [("ip", "1.2.3.4")],
        [put("connection_creation_rate", 1.5)],
        "connection_creation_rate cannot be a fractional value.",
    ),
    (
        "long too large",
        [("client-id", "c")],
        [put("consumer_byte_rate", 36893488147419103232.4)],
        "Proposed value for consumer_byte_rate is too large for a LONG.",
    ),
    (
        "long infinity",
        [("user", "a")],
        [put("producer_byte_rate", math.inf)],
        "Proposed value for producer_byte_rate is too large for a LONG.",
    ),
    (
        "int too large",
        [("ip", "1.2.3.4")],
        [put("connection_creation_rate", 2147483648.0)],
        "Proposed value for connection_creation_rate is too large for an INT.",
    ),
    (
        "int too large and fractional",
        [("ip", "1.2.3.4")],
        [put("connection_creation_rate", 2147483647.5)],
        "Proposed value for connection_creation_rate is too large for an INT.",
    ),
    # HashMap order decides between two bad ops: consumer_byte_rate iterates before request_percentage
    (
        "ops in map order",
        [("user", "a")],
        [put("request_percentage", 0.0), put("consumer_byte_rate", 1.5)],
        "consumer_byte_rate cannot be a fractional value.",
    ),
    # duplicate key: "Duplicate quota key ..." is overwritten by "Ignoring duplicate entity ..."
    (
        "duplicate key",
        [("user", "alice")],
        [put("producer_byte_rate", 1024), put("producer_byte_rate", 2048)],
        "Ignoring duplicate entity ClientQuotaEntity(entries={user=alice})",
    ),
    (
        "duplicate key set and remove",
        [("user", "alice"), ("client-id", None)],
        [put("producer_byte_rate", 1024), remove("producer_byte_rate")],
        "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=null, user=alice})",
    ),
    (
        "duplicate key before entity errors",
        [("foo", "x")],
        [remove("a"), remove("a")],
        "Ignoring duplicate entity ClientQuotaEntity(entries={foo=x})",
    ),
]


@pytest.mark.parametrize(
    "entity, ops, message", [case[1:] for case in ALTER_ERRORS], ids=[case[0] for case in ALTER_ERRORS]
)
@pytest.mark.parametrize("validate_only", [False, True])
def test_alter_rejects(entity, ops, message, validate_only):
    """Each invalid entry gets INVALID_REQUEST with Kafka's message and changes nothing."""
    quotas = {"user=alice": {"producer_byte_rate": 1.0}, "ip=1.2.3.4": {"connection_creation_rate": 3.0}}
    before = copy.deepcopy(quotas)
    assert alter_one(quotas, entity, *ops, validate_only=validate_only) == (INVALID, message)
    assert quotas == before


ALTER_ACCEPTS = [
    (
        "user long",
        [("user", "alice")],
        [put("producer_byte_rate", 1048576)],
        "user=alice",
        {"producer_byte_rate": 1048576.0},
    ),
    (
        "default user, all four keys",
        [("user", None)],
        [
            put("producer_byte_rate", 1e6),
            put("consumer_byte_rate", 2e6),
            put("request_percentage", 50.5),
            put("controller_mutation_rate", 0.25),
        ],
        "user=<default>",
        {
            "producer_byte_rate": 1e6,
            "consumer_byte_rate": 2e6,
            "request_percentage": 50.5,
            "controller_mutation_rate": 0.25,
        },
    ),
    (
        "client-id alone takes the user keys",
        [("client-id", "app")],
        [put("request_percentage", 200.0)],
        "client-id=app",
        {"request_percentage": 200.0},
    ),
    (
        "user and client-id",
        [("client-id", None), ("user", "alice")],
        [put("consumer_byte_rate", 5)],
        "client-id=<default>|user=alice",
        {"consumer_byte_rate": 5.0},
    ),
    (
        "fraction within 1e-6",
        [("user", "a")],
        [put("consumer_byte_rate", 1235.0000001)],
        "user=a",
        {"consumer_byte_rate": 1235.0000001},
    ),
    (
        "fraction within 1e-6 above",
        [("user", "a")],
        [put("producer_byte_rate", 3.0000009)],
        "user=a",
        {"producer_byte_rate": 3.0000009},
    ),
    (
        "doubles may be fractional and tiny",
        [("user", "a")],
        [put("controller_mutation_rate", 1e-9)],
        "user=a",
        {"controller_mutation_rate": 1e-9},
    ),
    (
        "doubles may be huge",
        [("user", "a")],
        [put("request_percentage", 1e300)],
        "user=a",
        {"request_percentage": 1e300},
    ),
    (
        "double infinity",
        [("user", "a")],
        [put("request_percentage", math.inf)],
        "user=a",
        {"request_percentage": math.inf},
    ),
    (
        "2**63 passes Java's long check",
        [("user", "a")],
        [put("producer_byte_rate", 2.0**63)],
        "user=a",
        {"producer_byte_rate": 2.0**63},
    ),
    (
        "int max",
        [("ip", "1.2.3.4")],
        [put("connection_creation_rate", 2147483647)],
        "ip=1.2.3.4",
        {"connection_creation_rate": 2147483647.0},
    ),
    (
        "default ip",
        [("ip", None)],
        [put("connection_creation_rate", 10)],
        "ip=<default>",
        {"connection_creation_rate": 10.0},
    ),
    ("ipv6", [("ip", "::1")], [put("connection_creation_rate", 10)], "ip=::1", {"connection_creation_rate": 10.0}),
    (
        "ipv6 in brackets",
        [("ip", "[2001:db8::1]")],
        [put("connection_creation_rate", 10)],
        "ip=[2001:db8::1]",
        {"connection_creation_rate": 10.0},
    ),
    (
        "ipv6 numeric zone",
        [("ip", "fe80::1%1")],
        [put("connection_creation_rate", 10)],
        "ip=fe80::1%251",
        {"connection_creation_rate": 10.0},
    ),
    (
        "ipv4 mapped",
        [("ip", "::ffff:1.2.3.4")],
        [put("connection_creation_rate", 10)],
        "ip=::ffff:1.2.3.4",
        {"connection_creation_rate": 10.0},
    ),
    (
        "java short ipv4",
        [("ip", "127.1")],
        [put("connection_creation_rate", 10)],
        "ip=127.1",
        {"connection_creation_rate": 10.0},
    ),
    (
        "java single-number ipv4",
        [("ip", "16909060")],
        [put("connection_creation_rate", 10)],
        "ip=16909060",
        {"connection_creation_rate": 10.0},
    ),
    (
        "java leading zero ipv4",
        [("ip", "1.2.3.04")],
        [put("connection_creation_rate", 10)],
        "ip=1.2.3.04",
        {"connection_creation_rate": 10.0},
    ),
    (
        "duplicate type keeps the last name",
        [("user", "a"), ("user", "b")],
        [put("producer_byte_rate", 7)],
        "user=b",
        {"producer_byte_rate": 7.0},
    ),
    (
        "remove ops are not validated",
        [("user", "a")],
        [put("producer_byte_rate", 7), remove("foobar", -1.0), remove("connection_creation_rate")],
        "user=a",
        {"producer_byte_rate": 7.0},
    ),
]


@pytest.mark.parametrize(
    "entity, ops, key, values", [case[1:] for case in ALTER_ACCEPTS], ids=[case[0] for case in ALTER_ACCEPTS]
)
def test_alter_accepts(entity, ops, key, values):
    """Valid entries are stored under the canonical key."""
    quotas = {}
    assert alter_one(quotas, entity, *ops) == (client_quotas.NONE, None)
    assert quotas == {key: values}
    assert client_quotas.parse_entity_key(key) == dict(entity)
    json.dumps(quotas)


@pytest.mark.parametrize("entity, ops", [case[1:3] for case in ALTER_ACCEPTS], ids=[case[0] for case in ALTER_ACCEPTS])
def test_alter_validate_only_writes_nothing(entity, ops):
    """validate_only runs every check and writes nothing."""
    quotas = {"user=z": {"request_percentage": 1.0}}
    assert alter_one(quotas, entity, *ops, validate_only=True) == (client_quotas.NONE, None)
    assert quotas == {"user=z": {"request_percentage": 1.0}}


def test_nan_passes_validation_as_in_kafka():
    """NaN is neither <= 0, too large nor fractional in Java, so Kafka accepts it."""
    quotas = {}
    assert alter_one(
        quotas, [("user", "a")], put("producer_byte_rate", math.nan), put("request_percentage", math.nan)
    ) == (client_quotas.NONE, None)
    assert all(math.isnan(value) for value in quotas["user=a"].values())


@pytest.mark.parametrize(
    "name, resolvable, expected",
    [
        ("broker.example.com", True, (client_quotas.NONE, None)),
        ("broker.example.com", False, (INVALID, "broker.example.com is not a valid IP or resolvable host.")),
        ("fe80::1%eth0", True, (client_quotas.NONE, None)),
        ("fe80::1%nope0", False, (INVALID, "fe80::1%nope0 is not a valid IP or resolvable host.")),
    ],
)
def test_ip_host_names_go_to_the_resolver(name, resolvable, expected):
    """Names that are not IP literals are host names: valid only if they resolve."""
    asked = []

    def resolve_host(host):
        asked.append(host)
        return resolvable

    assert alter_one({}, [("ip", name)], put("connection_creation_rate", 1), resolve_host=resolve_host) == expected
    assert asked == [name]


@pytest.mark.parametrize("name", ["1.2.3.4", "::1", None])
def test_ip_literals_need_no_resolver(name):
    """IP literals and the default ip are decided without a lookup."""

    def resolve_host(host):
        raise AssertionError(host)

    assert alter_one({}, [("ip", name)], put("connection_creation_rate", 1), resolve_host=resolve_host) == (
        client_quotas.NONE,
        None,
    )


# ---------------------------------------------------------------------------------------------------------------------
# AlterClientQuotas: effects on the store

STORE = {"user=alice": {"producer_byte_rate": 100.0, "consumer_byte_rate": 200.0}}

OK = (client_quotas.NONE, None)
ALTER_EFFECTS = [
    (
        "replace and add",
        [put("producer_byte_rate", 101), put("request_percentage", 10)],
        OK,
        {"user=alice": {"producer_byte_rate": 101.0, "consumer_byte_rate": 200.0, "request_percentage": 10.0}},
    ),
    ("same value", [put("producer_byte_rate", 100)], OK, STORE),
    ("remove one", [remove("producer_byte_rate")], OK, {"user=alice": {"consumer_byte_rate": 200.0}}),
    ("remove absent is a no-op", [remove("request_percentage")], OK, STORE),
    ("remove all drops the entity", [remove("producer_byte_rate"), remove("consumer_byte_rate")], OK, {}),
    (
        "remove all and set one",
        [remove("producer_byte_rate"), remove("consumer_byte_rate"), put("controller_mutation_rate", 2.5)],
        OK,
        {"user=alice": {"controller_mutation_rate": 2.5}},
    ),
    (
        "remove value is ignored",
        [remove("producer_byte_rate", -7.0)],
        OK,
        {"user=alice": {"consumer_byte_rate": 200.0}},
    ),
    ("no ops", [], OK, STORE),
    (
        "entity-atomic: a bad op drops the good ones",
        [remove("consumer_byte_rate"), put("request_percentage", 5), put("producer_byte_rate", 0.5)],
        (INVALID, "producer_byte_rate cannot be a fractional value."),
        STORE,
    ),
]


@pytest.mark.parametrize(
    "ops, result, after", [case[1:] for case in ALTER_EFFECTS], ids=[case[0] for case in ALTER_EFFECTS]
)
def test_alter_effects(ops, result, after):
    """Set, replace, remove (no-op when absent) and entity-atomic rejection on a stored entity."""
    quotas = copy.deepcopy(STORE)
    assert alter_one(quotas, [("user", "alice")], *ops) == result
    assert quotas == after


def test_removing_from_absent_entity_succeeds_and_stores_nothing():
    """Removing a key of an unknown entity succeeds and stores nothing."""
    quotas = {}
    assert alter_one(quotas, [("user", None), ("client-id", None)], remove("producer_byte_rate")) == (
        client_quotas.NONE,
        None,
    )
    assert not quotas


def test_entries_are_independent():
    """One bad entry does not stop the others."""
    quotas = {}
    results = client_quotas.alter(
        quotas,
        [
            entry([("user", "a")], put("producer_byte_rate", 1)),
            entry([("user", "b")], put("producer_byte_rate", -1)),
            entry([("client-id", "c")], put("request_percentage", 1)),
        ],
        False,
    )
    assert results == [
        (client_quotas.NONE, None),
        (INVALID, "Quota producer_byte_rate must be greater than 0"),
        (client_quotas.NONE, None),
    ]
    assert quotas == {"user=a": {"producer_byte_rate": 1.0}, "client-id=c": {"request_percentage": 1.0}}


def test_no_entries():
    """An empty request answers nothing."""
    quotas = {"user=a": {"producer_byte_rate": 1.0}}
    assert not client_quotas.alter(quotas, [], False)
    assert quotas == {"user=a": {"producer_byte_rate": 1.0}}


DUPLICATE_A = "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=c, user=a})"


@pytest.mark.parametrize("validate_only", [False, True])
def test_duplicate_entity_across_entries(validate_only):
    """Later entries of an entity are rejected; Kafka's response keeps one result per entity."""
    quotas = {}
    entries = [
        entry([("user", "a"), ("client-id", "c")], put("producer_byte_rate", 1)),
        entry([("user", "x")], put("producer_byte_rate", 2)),
        entry([("client-id", "c"), ("user", "a")], put("consumer_byte_rate", 3)),
        entry([("user", "a"), ("client-id", "c")], put("consumer_byte_rate", -3)),
    ]
    results = client_quotas.alter(quotas, entries, validate_only)
    assert results == [
        (client_quotas.NONE, None),
        (client_quotas.NONE, None),
        (INVALID, DUPLICATE_A),
        (INVALID, DUPLICATE_A),
    ]
    # the first entry of the entity is still written (ControllerResult.atomicOf keeps its records)
    assert quotas == (
        {}
        if validate_only
        else {"client-id=c|user=a": {"producer_byte_rate": 1.0}, "user=x": {"producer_byte_rate": 2.0}}
    )
    # Kafka answers once per entity, with the last result (a HashMap<ClientQuotaEntity, ApiError>)
    assert client_quotas.alter_response(entries, results) == [
        ([("user", "x")], client_quotas.NONE, None),
        ([("client-id", "c"), ("user", "a")], INVALID, DUPLICATE_A),
    ]


def test_duplicate_of_an_invalid_entity():
    """The duplicate check also applies to an entity that failed validation."""
    entries = [entry([("foo", "x")]), entry([("foo", "x")])]
    results = client_quotas.alter({}, entries, False)
    assert results == [
        (INVALID, "Unhandled client quota entity type: foo"),
        (INVALID, "Ignoring duplicate entity ClientQuotaEntity(entries={foo=x})"),
    ]


def test_duplicate_type_collapses_before_the_duplicate_entity_check():
    """A repeated type collapses into a map first."""
    entries = [
        entry([("user", "b")], put("producer_byte_rate", 1)),
        entry([("user", "a"), ("user", "b")], put("consumer_byte_rate", 1)),
    ]
    assert client_quotas.alter({}, entries, False)[1] == (
        INVALID,
        "Ignoring duplicate entity ClientQuotaEntity(entries={user=b})",
    )


def test_alter_response_order_is_kafkas_hashmap_order():
    """alter_response lists entities as Kafka's HashMap<ClientQuotaEntity, ApiError> does."""
    specs = [
        [("user", "alice")],
        [("user", None)],
        [("client-id", "app")],
        [("user", "alice"), ("client-id", "app")],
        [("user", None), ("client-id", None)],
        [("ip", "1.2.3.4")],
        [("ip", None)],
        [("user", "bob"), ("client-id", "app")],
        [("client-id", None)],
        [("user", "carol")],
    ]
    entries = [entry(spec) for spec in specs]
    response = client_quotas.alter_response(entries, client_quotas.alter({}, entries, True))
    # as printed by java.util.HashMap<ClientQuotaEntity, ApiError> on OpenJDK 17
    assert [parts for parts, _ignored, _ignored in response] == [
        [("ip", "1.2.3.4")],
        [("user", "alice")],
        [("ip", None)],
        [("client-id", "app"), ("user", "alice")],
        [("client-id", "app")],
        [("user", None)],
        [("client-id", None)],
        [("client-id", "app"), ("user", "bob")],
        [("client-id", None), ("user", None)],
        [("user", "carol")],
    ]
    assert {code for _ignored, code, _ignored in response} == {client_quotas.NONE}


# ---------------------------------------------------------------------------------------------------------------------
# DescribeClientQuotas (ClientQuotasImage.describe)

DESCRIBE_STORE = {
    client_quotas.entity_key(entity): {"producer_byte_rate": float(i + 1)}
    for i, entity in enumerate(
        [
            {"user": "alice"},
            {"user": None},
            {"client-id": "app"},
            {"client-id": None},
            {"user": "alice", "client-id": "app"},
            {"user": "alice", "client-id": None},
            {"user": None, "client-id": None},
            {"user": "bob", "client-id": "app"},
            {"ip": "1.2.3.4"},
            {"ip": None},
        ]
    )
}
ALL = sorted(DESCRIBE_STORE)

DESCRIBE_MATCHES = [
    ("no components returns everything", [], False, ALL),
    ("no components strict returns nothing", [], True, []),
    (
        "exact user",
        [("user", EXACT, "alice")],
        False,
        ["client-id=<default>|user=alice", "client-id=app|user=alice", "user=alice"],
    ),
    ("exact user strict", [("user", EXACT, "alice")], True, ["user=alice"]),
    ("exact user no match", [("user", EXACT, "carol")], False, []),
    ("exact empty string matches nothing", [("user", EXACT, "")], False, []),
    ("exact '<default>' is a name, not the default", [("user", EXACT, "<default>")], False, []),
    ("default user", [("user", DEFAULT, None)], False, ["client-id=<default>|user=<default>", "user=<default>"]),
    ("default user strict", [("user", DEFAULT, None)], True, ["user=<default>"]),
    (
        "specified user includes the default",
        [("user", SPECIFIED, None)],
        False,
        [
            "client-id=<default>|user=<default>",
            "client-id=<default>|user=alice",
            "client-id=app|user=alice",
            "client-id=app|user=bob",
            "user=<default>",
            "user=alice",
        ],
    ),
    ("specified user strict", [("user", SPECIFIED, None)], True, ["user=<default>", "user=alice"]),
    (
        "exact user and specified client-id",
        [("user", EXACT, "alice"), ("client-id", SPECIFIED, None)],
        True,
        ["client-id=<default>|user=alice", "client-id=app|user=alice"],
    ),
    (
        "both specified strict",
        [("client-id", SPECIFIED, None), ("user", SPECIFIED, None)],
        True,
        [
            "client-id=<default>|user=<default>",
            "client-id=<default>|user=alice",
            "client-id=app|user=alice",
            "client-id=app|user=bob",
        ],
    ),
    (
        "default client-id and specified user",
        [("client-id", DEFAULT, None), ("user", SPECIFIED, None)],
        False,
        ["client-id=<default>|user=<default>", "client-id=<default>|user=alice"],
    ),
    (
        "exact client-id",
        [("client-id", EXACT, "app")],
        False,
        ["client-id=app", "client-id=app|user=alice", "client-id=app|user=bob"],
    ),
    (
        "exact client-id and user",
        [("client-id", EXACT, "app"), ("user", EXACT, "bob")],
        False,
        ["client-id=app|user=bob"],
    ),
    (
        "both default",
        [("client-id", DEFAULT, None), ("user", DEFAULT, None)],
        True,
        ["client-id=<default>|user=<default>"],
    ),
    ("specified ip", [("ip", SPECIFIED, None)], False, ["ip=1.2.3.4", "ip=<default>"]),
    ("default ip", [("ip", DEFAULT, None)], True, ["ip=<default>"]),
    ("exact ip", [("ip", EXACT, "1.2.3.4")], False, ["ip=1.2.3.4"]),
]


@pytest.mark.parametrize(
    "components, strict, keys", [case[1:] for case in DESCRIBE_MATCHES], ids=[case[0] for case in DESCRIBE_MATCHES]
)
def test_describe_matches(components, strict, keys):
    """EXACT, DEFAULT and SPECIFIED components, strict and not."""
    before = copy.deepcopy(DESCRIBE_STORE)
    code, message, entries = client_quotas.describe(DESCRIBE_STORE, components, strict)
    assert (code, message) == (client_quotas.NONE, "")
    assert [client_quotas.entity_key(dict(parts)) for parts, _ignored in entries] == keys
    for parts, values in entries:
        assert values == DESCRIBE_STORE[client_quotas.entity_key(dict(parts))]
    assert DESCRIBE_STORE == before


IP_FILTER = (
    "Invalid entity filter component combination. IP filter component should not be used with user or clientId "
    "filter component."
)
DESCRIBE_ERRORS = [
    ("empty type", [("", EXACT, "x")], INVALID, "Invalid empty entity type."),
    (
        "duplicate type",
        [("user", EXACT, "a"), ("user", SPECIFIED, None)],
        INVALID,
        "Entity type user cannot appear more than once in the filter.",
    ),
    (
        "duplicate default",
        [("client-id", DEFAULT, None), ("client-id", DEFAULT, None)],
        INVALID,
        "Entity type client-id cannot appear more than once in the filter.",
    ),
    (
        "duplicate checked before match type",
        [("user", EXACT, "a"), ("user", 9, "b")],
        INVALID,
        "Entity type user cannot appear more than once in the filter.",
    ),
    ("unknown type", [("group", SPECIFIED, None)], client_quotas.UNSUPPORTED_VERSION, "Unsupported entity type group"),
    (
        "unknown type before its match type",
        [("group", 9, None)],
        client_quotas.UNSUPPORTED_VERSION,
        "Unsupported entity type group",
    ),
    (
        "exact with null",
        [("user", EXACT, None)],
        INVALID,
        "Request specified MATCH_TYPE_EXACT, but set match string to null.",
    ),
    (
        "default with match",
        [("user", DEFAULT, "a")],
        INVALID,
        "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
    ),
    (
        "specified with match",
        [("ip", SPECIFIED, "a")],
        INVALID,
        "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.",
    ),
    ("unknown match type", [("user", 3, None)], INVALID, "Unknown match type 3"),
    ("negative match type", [("user", -1, "a")], INVALID, "Unknown match type -1"),
    ("ip with user", [("ip", SPECIFIED, None), ("user", DEFAULT, None)], INVALID, IP_FILTER),
    ("client-id with ip", [("client-id", EXACT, "c"), ("ip", EXACT, "1.2.3.4")], INVALID, IP_FILTER),
    (
        "components checked in order",
        [("user", EXACT, None), ("group", SPECIFIED, None)],
        INVALID,
        "Request specified MATCH_TYPE_EXACT, but set match string to null.",
    ),
]


@pytest.mark.parametrize(
    "components, code, message", [case[1:] for case in DESCRIBE_ERRORS], ids=[case[0] for case in DESCRIBE_ERRORS]
)
@pytest.mark.parametrize("strict", [False, True])
def test_describe_errors_are_top_level(components, code, message, strict):
    """Filter errors are top-level with entries None."""
    assert client_quotas.describe(DESCRIBE_STORE, components, strict) == (code, message, None)


def test_describe_entity_parts_and_values_in_java_order():
    """Entity parts and values come in Java's HashMap order."""
    quotas = {
        "client-id=app|user=alice": {
            "producer_byte_rate": 1.0,
            "consumer_byte_rate": 2.0,
            "request_percentage": 3.0,
            "controller_mutation_rate": 4.0,
        }
    }
    _ignored, _ignored, entries = client_quotas.describe(quotas, [], False)
    assert entries == [([("client-id", "app"), ("user", "alice")], quotas["client-id=app|user=alice"])]
    assert list(entries[0][1]) == [
        "request_percentage",
        "producer_byte_rate",
        "consumer_byte_rate",
        "controller_mutation_rate",
    ]


def test_describe_empty_store():
    """Nothing stored, nothing described."""
    assert client_quotas.describe({}, [("user", DEFAULT, None)], False) == (client_quotas.NONE, "", [])


def test_describe_after_alter_round_trip():
    """What alter stores (through JSON) is what describe reports."""
    quotas = {}
    client_quotas.alter(
        quotas,
        [
            entry([("user", None)], put("producer_byte_rate", 1024), put("consumer_byte_rate", 2048)),
            entry([("user", None)], put("request_percentage", 1)),
            entry([("ip", "10.1.2.3")], put("connection_creation_rate", 10)),
        ],
        False,
    )
    quotas = json.loads(json.dumps(quotas))
    assert client_quotas.describe(quotas, [("user", DEFAULT, None)], True) == (
        client_quotas.NONE,
        "",
        [([("user", None)], {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2048.0})],
    )
    assert client_quotas.describe(quotas, [("ip", EXACT, "10.1.2.3")], False)[2] == [
        ([("ip", "10.1.2.3")], {"connection_creation_rate": 10.0})
    ]
