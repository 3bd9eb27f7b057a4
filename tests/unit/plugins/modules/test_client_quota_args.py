"""client_quota and client_quota_info without a cluster: argument spec, spec cleaning, filters and the core flow
(reconcile) against a fake adapter that records every request."""

import re

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from fake_kafka import FakeAdapter

from ansible_collections.headroom.kafka.plugins.module_utils import quota_apply, quota_spec
from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import (
    MATCH_DEFAULT,
    MATCH_EXACT,
    MATCH_SPECIFIED,
)
from ansible_collections.headroom.kafka.plugins.modules import client_quota, client_quota_info


def run(adapter, quotas, exclusive=False, check_mode=False):
    return quota_apply.reconcile(adapter, quota_spec.desired_state(quotas), exclusive=exclusive, check_mode=check_mode)


def kinds(adapter):
    return [request[0] for request in adapter.requests]


# -- argument spec ----------------------------------------------------------------------------------------------------
def validate(params, spec=None):
    spec = spec or client_quota.MODULE_OPTIONS
    result = ArgumentSpecValidator(spec).validate(params)
    return result.validated_parameters, [str(error) for error in result.errors]


def test_argument_spec_fills_defaults_and_converts_numbers():
    params, errors = validate({"quotas": [{"entity": {"user": "alice"}, "producer_byte_rate": "1024"}]})
    assert errors == []
    item = params["quotas"][0]
    assert item["producer_byte_rate"] == 1024.0
    assert item["state"] == "present"
    assert item["entity"] == {"user": "alice", "client_id": None, "ip": None}
    assert params["exclusive"] is False
    cleaned = client_quota.spec_from_params(params["quotas"])
    assert cleaned == [{"entity": {"user": "alice"}, "producer_byte_rate": 1024.0, "state": "present"}]
    assert quota_spec.desired_state(cleaned)


@pytest.mark.parametrize(
    "quota, message",
    [
        (
            {"entity": {"user": "alice"}, "producer_byte_rate": 1.5},
            "quotas[0].producer_byte_rate must be a whole number",
        ),
        (
            {"entity": {"user": "alice", "ip": "10.0.0.1"}, "producer_byte_rate": 1},
            "quotas[0].entity: ip cannot be combined with user or client_id",
        ),
        (
            {"entity": {"ip": "10.0.0.1"}, "producer_byte_rate": 1},
            "quotas[0].producer_byte_rate is not valid for ip entities",
        ),
    ],
)
def test_semantic_errors_pass_the_argument_spec_and_reach_quota_spec(quota, message):
    params, errors = validate({"quotas": [quota]})
    assert errors == []
    with pytest.raises(quota_spec.QuotaSpecError, match=re.escape(message)):
        quota_spec.desired_state(client_quota.spec_from_params(params["quotas"]))


@pytest.mark.parametrize(
    "params, message",
    [
        (
            {"quotas": [{"entity": {"user": "a"}, "produce_rate": 1}]},
            "quotas.produce_rate. Supported parameters include: connection_creation_rate",
        ),
        (
            {"quotas": [{"entity": {"group": "a"}}]},
            "quotas.entity.group. Supported parameters include: client_id, ip, user",
        ),
        ({"quotas": [{"producer_byte_rate": 1}]}, "entity"),
        ({"quotas": [{"entity": {"user": "a"}, "producer_byte_rate": "fast"}]}, "producer_byte_rate"),
        ({"quotas": [{"entity": {"user": "a"}, "state": "gone"}]}, "state"),
        ({}, "quotas"),
    ],
)
def test_argument_spec_errors(params, message):
    _params, errors = validate(params)
    assert errors and message in " ".join(errors)


# -- reconcile ---------------------------------------------------------------------------------------------------------
def test_first_apply_then_idempotent_rerun():
    adapter = FakeAdapter()
    quotas = [
        {"entity": {"user": "alice"}, "producer_byte_rate": 1024, "consumer_byte_rate": 2048},
        {"entity": {"user": "<default>", "client_id": "<default>"}, "request_percentage": 12.5},
        {"entity": {"ip": "<default>"}, "connection_creation_rate": 30},
    ]
    result = run(adapter, quotas)
    assert kinds(adapter) == ["describe", "validate", "alter"]
    assert adapter.requests[0] == ("describe", None, False)
    assert result["changed"] is True
    assert result["changes"] == [  # users (default first), then clients, then ips
        {
            "entity": {"client_id": "<default>", "user": "<default>"},
            "before": {},
            "after": {"request_percentage": 12.5},
        },
        {"entity": {"user": "alice"}, "before": {}, "after": {"consumer_byte_rate": 2048, "producer_byte_rate": 1024}},
        {"entity": {"ip": "<default>"}, "before": {}, "after": {"connection_creation_rate": 30}},
    ]
    assert result["quotas"] == [{"entity": c["entity"], "quota_values": c["after"]} for c in result["changes"]]
    assert result["diff"] == {
        "before": {},
        "after": {
            "ip=<default>": {"connection_creation_rate": 30},
            "user=<default>,client_id=<default>": {"request_percentage": 12.5},
            "user=alice": {"consumer_byte_rate": 2048, "producer_byte_rate": 1024},
        },
    }
    adapter.requests = []
    again = run(adapter, quotas, exclusive=True)
    assert kinds(adapter) == ["describe"]
    assert again["changed"] is False and again["changes"] == [] and again["quotas"] == result["quotas"]


def test_request_count_is_constant():
    quotas = [{"entity": {"user": "u{0:04d}".format(i)}, "producer_byte_rate": 1000 + i} for i in range(500)]
    adapter = FakeAdapter()
    result = run(adapter, quotas)
    assert adapter.requests == [("describe", None, False), ("validate", 500), ("alter", 500)]
    assert len(result["changes"]) == 500 and len(result["quotas"]) == 500


def test_check_mode_validates_but_writes_nothing():
    adapter = FakeAdapter([({"user": "alice"}, {"producer_byte_rate": 1.0})])
    result = run(adapter, [{"entity": {"user": "alice"}, "producer_byte_rate": 2}], check_mode=True)
    assert kinds(adapter) == ["describe", "validate"]
    assert result["changed"] is True
    assert result["quotas"] == [{"entity": {"user": "alice"}, "quota_values": {"producer_byte_rate": 2}}]
    assert adapter.store[quota_spec.entity_key({"user": "alice"})][1] == {"producer_byte_rate": 1.0}


def test_refused_entity_fails_with_nothing_applied():
    bad = {"ip": "2001:db8::g1"}
    adapter = FakeAdapter(
        refuse={quota_spec.entity_key(bad): ("INVALID_REQUEST", "2001:db8::g1 is not a valid IP or resolvable host.")}
    )
    quotas = [
        {"entity": {"user": "alice", "client_id": "app"}, "producer_byte_rate": 5},
        {"entity": {"ip": "2001:db8::g1"}, "connection_creation_rate": 3},
    ]
    with pytest.raises(quota_apply.QuotaApplyError) as caught:
        run(adapter, quotas)
    assert kinds(adapter) == ["describe", "validate"]
    assert adapter.store == {}
    assert str(caught.value) == (
        "Kafka refused 1 of 2 client quota change(s); nothing was applied: "
        "ip=2001:db8::g1 (set connection_creation_rate=3): "
        "INVALID_REQUEST: 2001:db8::g1 is not a valid IP or resolvable host."
    )
    assert caught.value.result["errors"] == [
        {
            "entity": bad,
            "quota_keys": ["connection_creation_rate"],
            "error": "INVALID_REQUEST",
            "message": "2001:db8::g1 is not a valid IP or resolvable host.",
        }
    ]
    assert caught.value.result["changed"] is False
    assert caught.value.result["changes"] == []
    assert [c["entity"] for c in caught.value.result["planned"]] == [
        {"client_id": "app", "user": "alice"},
        {"ip": "2001:db8::g1"},
    ]


def test_refused_in_check_mode_too():
    adapter = FakeAdapter(refuse={quota_spec.entity_key({"user": "a"}): ("INVALID_REQUEST", "nope")})
    with pytest.raises(quota_apply.QuotaApplyError, match="nothing was applied: user=a"):
        run(adapter, [{"entity": {"user": "a"}, "producer_byte_rate": 1}], check_mode=True)


def test_authorization_failure_names_every_entity_and_the_permission():
    quotas = [{"entity": {"user": "u{0:02d}".format(i)}, "producer_byte_rate": 1} for i in range(12)]
    refuse = dict(
        (quota_spec.entity_key({"user": "u{0:02d}".format(i)}), ("CLUSTER_AUTHORIZATION_FAILED", None))
        for i in range(12)
    )
    adapter = FakeAdapter([({"user": "u00"}, {"consumer_byte_rate": 9.0})], refuse=refuse)
    with pytest.raises(quota_apply.QuotaApplyError) as caught:
        run(adapter, quotas)
    message = str(caught.value)
    assert message == (
        "Kafka refused 12 of 12 client quota change(s); nothing was applied: CLUSTER_AUTHORIZATION_FAILED "
        "(the principal needs the ALTER_CONFIGS operation on the cluster resource to alter client quotas) "
        "for user=u00, user=u01, user=u02, user=u03, user=u04, user=u05, user=u06, user=u07, user=u08, user=u09; "
        "and 2 more (see errors)"
    )
    assert len(caught.value.result["errors"]) == 12


def test_refused_on_apply_reports_what_was_applied():
    adapter = FakeAdapter(
        refuse_on_apply={quota_spec.entity_key({"user": "b"}): ("INVALID_REQUEST", "changed meanwhile")}
    )
    with pytest.raises(quota_apply.QuotaApplyError) as caught:
        run(
            adapter,
            [{"entity": {"user": "a"}, "producer_byte_rate": 1}, {"entity": {"user": "b"}, "producer_byte_rate": 1}],
        )
    assert "refused 1 of 2 when applying them; the other 1 were applied" in str(caught.value)
    assert caught.value.result["changed"] is True
    assert [c["entity"] for c in caught.value.result["changes"]] == [{"user": "a"}]
    assert len(caught.value.result["planned"]) == 2


def test_mixed_refusals_list_each_entity_with_its_keys():
    refuse = {
        quota_spec.entity_key({"user": "a"}): ("INVALID_REQUEST", "Quota producer_byte_rate must be greater than 0"),
        quota_spec.entity_key({"client-id": "c"}): ("CLUSTER_AUTHORIZATION_FAILED", None),
    }
    adapter = FakeAdapter([({"client-id": "c"}, {"request_percentage": 1.0})], refuse=refuse)
    with pytest.raises(quota_apply.QuotaApplyError) as caught:
        run(
            adapter,
            [
                {"entity": {"user": "a"}, "producer_byte_rate": 1},
                {"entity": {"client_id": "c"}, "state": "absent"},
                {"entity": {"user": "b"}, "producer_byte_rate": 1},
            ],
        )
    assert str(caught.value) == (
        "Kafka refused 2 of 3 client quota change(s); nothing was applied: "
        "user=a (set producer_byte_rate=1): INVALID_REQUEST: Quota producer_byte_rate must be greater than 0; "
        "client_id=c (remove request_percentage): CLUSTER_AUTHORIZATION_FAILED "
        "(the principal needs the ALTER_CONFIGS operation on the cluster resource to alter client quotas)"
    )


def test_exclusive_and_absent_and_diff():
    adapter = FakeAdapter(
        [
            ({"user": "alice"}, {"producer_byte_rate": 1.0, "request_percentage": 5.0}),
            ({"client-id": "old"}, {"consumer_byte_rate": 7.0}),
            ({"ip": "10.0.0.1"}, {"connection_creation_rate": 3.0}),
        ]
    )
    result = run(
        adapter,
        [{"entity": {"user": "alice"}, "producer_byte_rate": 1.0}, {"entity": {"ip": "10.0.0.1"}, "state": "absent"}],
        exclusive=True,
    )
    assert result["diff"] == {
        "before": {
            "client_id=old": {"consumer_byte_rate": 7},
            "ip=10.0.0.1": {"connection_creation_rate": 3},
            "user=alice": {"producer_byte_rate": 1, "request_percentage": 5.0},
        },
        "after": {"user=alice": {"producer_byte_rate": 1}},
    }
    assert result["quotas"] == [{"entity": {"user": "alice"}, "quota_values": {"producer_byte_rate": 1}}]
    assert list(adapter.store) == [quota_spec.entity_key({"user": "alice"})]


# -- client_quota_info -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "filters, components",
    [
        ({}, []),
        ({"user": "alice"}, [("user", MATCH_EXACT, "alice")]),
        (
            {"user": "<default>", "client_id": "*"},
            [("user", MATCH_DEFAULT, None), ("client-id", MATCH_SPECIFIED, None)],
        ),
        ({"ip": "*"}, [("ip", MATCH_SPECIFIED, None)]),
        ({"client_id": "app"}, [("client-id", MATCH_EXACT, "app")]),
    ],
)
def test_filter_components(filters, components):
    assert client_quota_info.filter_components(**filters) == components


def test_filter_rejects_empty_name():
    with pytest.raises(quota_spec.QuotaSpecError, match="user must be a name, <default> or"):
        client_quota_info.filter_components(user="")


def test_read_quotas_sorted_in_user_form():
    adapter = FakeAdapter(
        [
            ({"user": "bob"}, {"producer_byte_rate": 5.0}),
            ({"user": None}, {"request_percentage": 1.5}),
            ({"user": "alice", "client-id": None}, {"consumer_byte_rate": 3.0}),
        ]
    )
    quotas = client_quota_info.read_quotas(adapter, [("user", MATCH_SPECIFIED, None)], strict=False)
    assert adapter.requests == [("describe", [("user", MATCH_SPECIFIED, None)], False)]
    assert quotas == [
        {"entity": {"user": "<default>"}, "quota_values": {"request_percentage": 1.5}},
        {"entity": {"client_id": "<default>", "user": "alice"}, "quota_values": {"consumer_byte_rate": 3}},
        {"entity": {"user": "bob"}, "quota_values": {"producer_byte_rate": 5}},
    ]
