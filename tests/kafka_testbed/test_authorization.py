"""Who may alter what once the cluster runs an authorizer, pinned to Kafka 4.x where the test cluster models it.

The model: with ``authorizer.class.name`` set (the ``tls`` and ``scram`` clusters run StandardAuthorizer), only
``super.users`` may alter client quotas (AlterClientQuotas: CLUSTER_AUTHORIZATION_FAILED 31 on every entry, before any
validation, as ControllerApis.handleAlterClientQuotas authorizes the whole request first) or configs
(IncrementalAlterConfigs: CLUSTER_AUTHORIZATION_FAILED "Cluster authorization failed." for BROKER resources,
TOPIC_AUTHORIZATION_FAILED 29 "Topic authorization failed." for TOPIC resources, after the receiving broker's own
request checks, as Kafka's controller authorizes after ConfigAdminManager.preprocess). No ACLs are modelled: every
other request but DescribeClientQuotas is open to every authenticated principal (real Kafka would deny them without
ACLs).

The principal is Kafka's: ``User:`` + the client certificate's subject in RFC 2253 form on a TLS listener
(``User:CN=admin``), ``User:<name>`` after SASL/SCRAM, whatever certificate the SASL_SSL client also presents.
"""

import uuid

import pytest
from clients import RawClient, confluent_config, kafka_python_config, settled
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType
from kafka import KafkaAdminClient
from kafka import errors as kafka_errors
from kafka.admin import ConfigResource as KafkaPythonResource
from kafka.net.sasl.scram import ScramClient
from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest, DescribeClientQuotasRequest
from kafka.protocol.admin.configs import DescribeConfigsRequest, IncrementalAlterConfigsRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from kafka_testbed import security
from kafka_testbed.model import wire
from kafka_testbed.testing import ClusterFactory

NONE, TOPIC_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED, INVALID_REQUEST = 0, 29, 31, 42
CLUSTER_DENIED = (CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
TOPIC_DENIED = (TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")
TOPIC, BROKER = 2, 4
SET, DELETE = 0, 1


@pytest.fixture(scope="module")
def factory(kafka_cluster_root):
    clusters = ClusterFactory(kafka_cluster_root)
    yield clusters
    clusters.close()


# -- Identities: how each client library and the raw client present one principal -----------------------------------


class Identity:
    """One principal's settings for confluent-kafka, kafka-python and the raw client."""

    def __init__(self, cluster, confluent=None, kafka_python=None, tls=None, sasl=None):
        self.cluster = cluster
        self.confluent = confluent_config(cluster, **(confluent or {}))
        self.kafka_python = kafka_python_config(cluster, **(kafka_python or {}))
        self.tls = tls if tls is not None else cluster.info.get("tls")
        self.sasl = sasl  # (mechanism, username, password) for raw connections

    def raw(self, node_id=1):
        entry = self.cluster.broker(node_id)
        client = RawClient(entry["host"], entry["port"], tls=self.tls)
        if self.sasl:
            mechanism, username, password = self.sasl
            assert client.request(wire.build(SaslHandshakeRequest, 1, {"mechanism": mechanism}), 1).error_code == NONE
            scram = ScramClient(username, password, mechanism)
            first = client.request(wire.build(SaslAuthenticateRequest, 2, {"auth_bytes": scram.first_message()}), 2)
            scram.process_server_first_message(first.auth_bytes)
            final = client.request(wire.build(SaslAuthenticateRequest, 2, {"auth_bytes": scram.final_message()}), 2)
            assert final.error_code == NONE, final.error_message
        return client


def tls_identity(cluster, name, common_name, organization=None):
    tls = cluster.info["tls"]
    directory = cluster.info["directory"] + "/tls"
    material = security.make_certificate(
        directory, name, tls["ca"], tls["ca_key"], common_name, organization=organization, server=False, client=True
    )
    return Identity(
        cluster,
        confluent={"ssl.certificate.location": material["cert"], "ssl.key.location": material["key"]},
        kafka_python={"ssl_certfile": material["cert"], "ssl_keyfile": material["key"]},
        tls={"ca": tls["ca"], "cert": material["cert"], "key": material["key"]},
    )


def scram_identity(cluster, username, password, mechanism="SCRAM-SHA-512"):
    return Identity(
        cluster,
        confluent={"sasl.mechanism": mechanism, "sasl.username": username, "sasl.password": password},
        kafka_python={"sasl_mechanism": mechanism, "sasl_plain_username": username, "sasl_plain_password": password},
        sasl=(mechanism, username, password),
    )


@pytest.fixture(scope="module", params=["tls", "scram", "scram+tls"])
def identities(request, factory):
    """(cluster, super user, other principal) for each kind of secured cluster."""
    tls = "tls" in request.param
    if request.param == "tls":
        cluster = factory(1, tls=True)
        return cluster, Identity(cluster), tls_identity(cluster, "alice", "alice")
    cluster = factory(1, scram=True, tls=tls)
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        cluster.add_scram_user("bob", "bob-secret", mechanism)
    sasl = cluster.info["sasl"]
    return (
        cluster,
        scram_identity(cluster, sasl["username"], sasl["password"]),
        scram_identity(cluster, "bob", "bob-secret"),
    )


@pytest.fixture(scope="module")
def topic(identities):
    _ignored, admin, _other = identities
    name = f"authz-{uuid.uuid4().hex[:10]}"
    client = AdminClient(admin.confluent)  # keep the handle alive until the future completes
    client.create_topics([NewTopic(name, 1, 1)])[name].result(10)
    return name


# -- Operations through each client ---------------------------------------------------------------------------------


def _entity_key(entity):
    return tuple(sorted(((e.entity_type, e.entity_name) for e in entity), key=lambda pair: pair[0]))


def quota_request(entries, validate_only=False, version=1):
    return wire.build(
        AlterClientQuotasRequest,
        version,
        {
            "validate_only": validate_only,
            "entries": [
                {
                    "entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
                    "ops": [{"key": k, "value": float(v or 0), "remove": v is None} for k, v in ops],
                }
                for entity, ops in entries
            ],
        },
    )


def alter_quotas_raw(identity, entries, validate_only=False):
    with identity.raw() as client:
        response = client.request(quota_request(entries, validate_only), 1)
    return {_entity_key(e.entity): (e.error_code, e.error_message) for e in response.entries}


def alter_quotas_kafka_python(identity, entries):
    """AlterClientQuotas over KafkaAdminClient's own (authenticated) connection."""
    entry = AlterClientQuotasRequest.EntryData
    request = AlterClientQuotasRequest(
        validate_only=False,
        entries=[
            entry(
                entity=[entry.EntityData(entity_type=t, entity_name=n) for t, n in entity],
                ops=[entry.OpData(key=k, value=float(v or 0), remove=v is None) for k, v in ops],
            )
            for entity, ops in entries
        ],
    )
    admin = KafkaAdminClient(**identity.kafka_python)
    try:

        async def send():
            return await admin._manager.send(request)  # pylint: disable=protected-access

        response = admin._manager.run(send)  # pylint: disable=protected-access
    finally:
        admin.close()
    return {_entity_key(e.entity): (e.error_code, e.error_message) for e in response.entries}


def quotas_of(identity, user):
    component = {"entity_type": "user", "match_type": 0, "match": user}
    with identity.raw() as client:
        response = client.request(
            wire.build(DescribeClientQuotasRequest, 1, {"components": [component], "strict": True}), 1
        )
    assert response.error_code == NONE
    return {v.key: v.value for e in response.entries for v in e.values}


def assert_quotas(identity, user, expected):
    """Brokers apply committed quotas asynchronously: poll until the expected quotas show (or time runs out)."""
    assert settled(lambda: quotas_of(identity, user), expected) == expected


def alter_config_confluent(identity, resource_type, name, ops, validate_only=False):
    entries = [
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET if op == SET else AlterConfigOpType.DELETE)
        for k, op, v in ops
    ]
    resource = ConfigResource(ResourceType(resource_type), name, incremental_configs=entries)
    client = AdminClient(identity.confluent)  # keep the handle alive until the future completes
    try:
        client.incremental_alter_configs([resource], validate_only=validate_only)[resource].result(15)
    except KafkaException as exc:
        return exc.args[0].code(), exc.args[0].str()
    return NONE, None


def alter_config_kafka_python(identity, resource_type, name, ops, validate_only=False):
    kind = "TOPIC" if resource_type == TOPIC else "BROKER"
    admin = KafkaAdminClient(**identity.kafka_python)
    try:
        result = admin.alter_configs(
            [KafkaPythonResource(kind, name, {k: (op, v) for k, op, v in ops})],
            validate_only=validate_only,
            raise_on_unknown=False,
            incremental=True,
        )
    finally:
        admin.close()
    return result[kind.lower()][name]


def kafka_python_outcome(code, message=None):
    return "OK" if code == NONE else str(kafka_errors.for_code(code)(message))


def config_value(identity, resource_type, name, key):
    request = wire.build(
        DescribeConfigsRequest,
        4,
        {
            "include_synonyms": False,
            "include_documentation": False,
            "resources": [{"resource_type": resource_type, "resource_name": name, "configuration_keys": [key]}],
        },
    )
    with identity.raw() as client:
        result = client.request(request, 4).results[0]
    assert result.error_code == NONE
    return {c.name: c.value for c in result.configs}.get(key)


# -- Super user -----------------------------------------------------------------------------------------------------


def test_super_user_alters_quotas(identities):
    _ignored, admin, _other = identities
    assert alter_quotas_raw(admin, [([("user", "q-raw")], [("producer_byte_rate", 1024)])]) == {
        (("user", "q-raw"),): (NONE, None)
    }
    assert alter_quotas_kafka_python(admin, [([("user", "q-kp")], [("consumer_byte_rate", 2048)])]) == {
        (("user", "q-kp"),): (NONE, None)
    }
    assert_quotas(admin, "q-raw", {"producer_byte_rate": 1024.0})
    assert_quotas(admin, "q-kp", {"consumer_byte_rate": 2048.0})
    alter_quotas_raw(
        admin,
        [([("user", "q-raw")], [("producer_byte_rate", None)]), ([("user", "q-kp")], [("consumer_byte_rate", None)])],
    )


def test_super_user_alters_configs(identities, topic):
    _ignored, admin, _other = identities
    try:
        assert alter_config_confluent(admin, BROKER, "1", [("log.cleaner.threads", SET, "2")]) == (NONE, None)
        assert settled(lambda: config_value(admin, BROKER, "1", "log.cleaner.threads"), "2") == "2"
        assert alter_config_kafka_python(admin, BROKER, "1", [("log.cleaner.threads", SET, "3")]) == "OK"
        assert settled(lambda: config_value(admin, BROKER, "1", "log.cleaner.threads"), "3") == "3"
        assert alter_config_confluent(admin, TOPIC, topic, [("retention.ms", SET, "1000")]) == (NONE, None)
        assert alter_config_kafka_python(admin, TOPIC, topic, [("segment.ms", SET, "2000")]) == "OK"
        both = ("1000", "2000")
        assert (
            settled(
                lambda: (
                    config_value(admin, TOPIC, topic, "retention.ms"),
                    config_value(admin, TOPIC, topic, "segment.ms"),
                ),
                both,
            )
            == both
        )
    finally:
        alter_config_confluent(admin, BROKER, "1", [("log.cleaner.threads", DELETE, None)])
        alter_config_confluent(admin, TOPIC, topic, [("retention.ms", DELETE, None), ("segment.ms", DELETE, None)])


# -- Any other principal --------------------------------------------------------------------------------------------


def test_other_principal_may_not_alter_quotas(identities):
    _ignored, admin, other = identities
    entries = [
        ([("user", "denied")], [("producer_byte_rate", 1024)]),
        ([("client-id", None)], [("request_percentage", 5)]),
    ]
    # The message is Kafka's "Request <the request> is not authorized."; only the code is pinned.
    expected = {
        (("user", "denied"),): CLUSTER_AUTHORIZATION_FAILED,
        (("client-id", None),): CLUSTER_AUTHORIZATION_FAILED,
    }
    assert {k: v[0] for k, v in alter_quotas_raw(other, entries).items()} == expected
    assert {k: v[0] for k, v in alter_quotas_kafka_python(other, entries).items()} == expected
    assert {k: v[0] for k, v in alter_quotas_raw(other, entries, validate_only=True).items()} == expected
    assert_quotas(admin, "denied", {})


def test_authorization_comes_before_quota_validation(identities):
    """The controller authorizes the whole AlterClientQuotas request before it validates any entry."""
    _ignored, _admin, other = identities
    results = alter_quotas_raw(other, [([("user", "")], [("producer_byte_rate", -1)]), ([("group", "g")], [("x", 1)])])
    assert {code for code, _message in results.values()} == {CLUSTER_AUTHORIZATION_FAILED}


def test_other_principal_may_not_alter_broker_configs(identities):
    _ignored, admin, other = identities
    ops = [("log.cleaner.threads", SET, "2")]
    assert alter_config_confluent(other, BROKER, "1", ops) == CLUSTER_DENIED
    assert alter_config_kafka_python(other, BROKER, "1", ops) == kafka_python_outcome(*CLUSTER_DENIED)
    assert alter_config_confluent(other, BROKER, "1", ops, validate_only=True) == CLUSTER_DENIED
    assert alter_config_kafka_python(
        other, BROKER, "1", [("log.cleaner.threads", DELETE, None)]
    ) == kafka_python_outcome(*CLUSTER_DENIED)
    with other.raw() as client:
        request = wire.build(
            IncrementalAlterConfigsRequest,
            1,
            {
                "validate_only": False,
                "resources": [
                    {
                        "resource_type": BROKER,
                        "resource_name": "",
                        "configs": [{"name": "log.cleaner.threads", "config_operation": SET, "value": "2"}],
                    }
                ],
            },
        )
        response = client.request(request, 1)
    assert [(r.error_code, r.error_message) for r in response.responses] == [CLUSTER_DENIED]
    assert settled(lambda: config_value(admin, BROKER, "1", "log.cleaner.threads"), "1") == "1"


def test_other_principal_may_not_alter_topic_configs(identities, topic):
    _ignored, admin, other = identities
    assert alter_config_confluent(other, TOPIC, topic, [("retention.ms", SET, "1000")]) == TOPIC_DENIED
    assert alter_config_kafka_python(other, TOPIC, topic, [("retention.ms", SET, "1000")]) == kafka_python_outcome(
        *TOPIC_DENIED
    )
    assert settled(lambda: config_value(admin, TOPIC, topic, "retention.ms"), "604800000") == "604800000"


def test_request_checks_come_before_authorization(identities, topic):
    """ConfigAdminManager.preprocess runs on the receiving broker before the controller authorizes."""
    _ignored, _admin, other = identities
    assert alter_config_confluent(other, BROKER, "1", [("num.partitions", SET, "3")]) == (
        INVALID_REQUEST,
        "Cannot update these configs dynamically: [num.partitions]",
    )
    with other.raw() as client:
        request = wire.build(
            IncrementalAlterConfigsRequest,
            1,
            {
                "validate_only": False,
                "resources": [
                    {
                        "resource_type": TOPIC,
                        "resource_name": topic,
                        "configs": [
                            {"name": "retention.ms", "config_operation": SET, "value": "1"},
                            {"name": "retention.ms", "config_operation": SET, "value": "2"},
                        ],
                    }
                ],
            },
        )
        response = client.request(request, 1)
    assert [(r.error_code, r.error_message) for r in response.responses] == [
        (INVALID_REQUEST, "Error due to duplicate config keys")
    ]


def test_other_principal_cannot_read_quotas(identities):
    """DescribeClientQuotas needs DESCRIBE_CONFIGS on the cluster (KafkaApis.handleDescribeClientQuotasRequest):
    top-level 31."""
    _ignored, _admin, other = identities
    component = {"entity_type": "user", "match_type": 0, "match": "nobody"}
    with other.raw() as client:
        response = client.request(
            wire.build(DescribeClientQuotasRequest, 1, {"components": [component], "strict": True}), 1
        )
    assert (response.error_code, response.entries) == (CLUSTER_AUTHORIZATION_FAILED, None)


@pytest.mark.model_only("no ACLs are modelled: Kafka denies a principal without ACLs")
def test_everything_else_is_open(identities, topic):
    """No ACLs are modelled: the other principal still reads metadata and configs and creates topics."""
    _ignored, _admin, other = identities
    admin_client = AdminClient(other.confluent)
    assert topic in admin_client.list_topics(timeout=10).topics
    resource = ConfigResource(ResourceType.TOPIC, topic)
    assert admin_client.describe_configs([resource])[resource].result(15)["retention.ms"].value == "604800000"
    name = f"authz-open-{uuid.uuid4().hex[:10]}"
    admin_client.create_topics([NewTopic(name, 1, 1)])[name].result(15)
    assert name in admin_client.list_topics(timeout=10).topics


# -- The principal is the whole certificate subject -----------------------------------------------------------------


def test_tls_principal_is_the_full_subject(factory):
    """super.users=User:CN=admin matches only that subject: CN=admin,O=Other is another principal."""
    cluster = factory(1, tls=True)
    same_cn = tls_identity(cluster, "admin-other-org", "admin", organization="Other")
    lookalike = tls_identity(cluster, "admin-lookalike", "Admin")
    admin = Identity(cluster)
    entries = [([("user", "principal-check")], [("producer_byte_rate", 1024)])]
    assert alter_quotas_raw(same_cn, entries)[(("user", "principal-check"),)][0] == CLUSTER_AUTHORIZATION_FAILED
    assert alter_quotas_raw(lookalike, entries)[(("user", "principal-check"),)][0] == CLUSTER_AUTHORIZATION_FAILED
    assert alter_quotas_raw(admin, entries) == {(("user", "principal-check"),): (NONE, None)}
    assert alter_config_confluent(same_cn, BROKER, "1", [("log.cleaner.threads", SET, "2")]) == CLUSTER_DENIED
