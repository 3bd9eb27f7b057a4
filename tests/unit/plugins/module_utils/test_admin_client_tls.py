"""The admin client's TLS files as the quota plugin's admin client settings: each store as a file or PEM, passwords
passed on, bad combinations refused naming the variable; and the quota_plugin role's fallbacks are the admin_client_tls
role's own defaults."""

import os
import re

import pytest
import yaml

from ansible_collections.headroom.kafka.plugins.module_utils import admin_client_tls, quota_plugin_spec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
BASE = {"dir": "/etc/kafka/admin-client/", "bootstrap_servers": "broker-1:9093,broker-2:9093"}


def admin(**settings):
    return admin_client_tls.plugin_admin(dict(BASE, **settings))


@pytest.mark.parametrize(
    "settings, ssl",
    [
        (
            {"files": {"ca_pem": "ca.crt", "cert_pem": "c.crt", "key_pem": "c.key"}},
            {
                "truststore_location": "/etc/kafka/admin-client/ca.crt",
                "truststore_type": "PEM",
                "keystore_location": "/etc/kafka/admin-client/admin.pem",
                "keystore_type": "PEM",
                "endpoint_identification_algorithm": "",
            },
        ),
        (
            {
                "files": {"truststore": "t.p12", "keystore": "k.jks"},
                "keystore_type": "JKS",
                "truststore_password": "trust-secret",
                "keystore_password": "key-store-secret",
                "key_password": "key-secret",
                "endpoint_identification_algorithm": "https",
            },
            {
                "truststore_location": "/etc/kafka/admin-client/truststore.p12",
                "truststore_type": "PKCS12",
                "truststore_password": "trust-secret",
                "keystore_location": "/etc/kafka/admin-client/keystore.jks",
                "keystore_type": "JKS",
                "keystore_password": "key-store-secret",
                "key_password": "key-secret",
                "endpoint_identification_algorithm": "https",
            },
        ),
        # A trust store only: the client shows no certificate (a listener that requires one refuses it).
        (
            {"files": {"ca_pem": "ca.crt"}, "key_password": "unused"},
            {
                "truststore_location": "/etc/kafka/admin-client/ca.crt",
                "truststore_type": "PEM",
                "endpoint_identification_algorithm": "",
            },
        ),
    ],
)
def test_each_store_is_a_file_or_pem_as_the_role_placed_it(settings, ssl):
    result = admin(**settings)
    assert result == {"bootstrap_servers": BASE["bootstrap_servers"], "security_protocol": "SSL", "ssl": ssl}
    # What the plugin's block then says: the admin client's keys, behind the plugin's prefix.
    lines = dict(quota_plugin_spec.admin_lines(result))
    assert lines["security.protocol"] == "SSL" and lines["bootstrap.servers"] == "broker-1:9093,broker-2:9093"
    assert lines["ssl.truststore.location"] == ssl["truststore_location"]


@pytest.mark.parametrize(
    "settings, message",
    [
        (
            {"files": {"cert_pem": "c.crt"}},
            "admin_client_tls_files must give cert_pem and key_pem together (got only cert_pem)",
        ),
        ({"files": {"truststore": "t.p12", "ca_pem": "ca.crt"}}, "gives both truststore and ca_pem"),
        ({"files": {"keystore": "k.p12", "cert_pem": "c", "key_pem": "k"}}, "gives both keystore and cert_pem"),
        ({"files": {"trust": "t.p12"}}, "admin_client_tls_files has unknown key(s) trust; allowed: truststore"),
        (
            {"files": {"truststore": "t"}, "truststore_type": "PEM"},
            "admin_client_tls_truststore_type must be one of PKCS12, JKS (got 'PEM')",
        ),
    ],
)
def test_what_cannot_work_is_refused_naming_the_variable(settings, message):
    with pytest.raises(admin_client_tls.AdminClientTlsError, match=re.escape(message)):
        admin(**settings)


def test_the_file_names_are_the_ones_the_role_writes():
    assert admin_client_tls.file_names("JKS", "PKCS12") == {
        "truststore": "truststore.jks",
        "keystore": "keystore.p12",
        "ca_pem": "ca.crt",
        "cert_pem": "admin.crt",
        "key_pem": "admin.key",
        "pem_key_store": "admin.pem",
    }


def test_the_quota_plugin_roles_fallbacks_are_the_admin_client_tls_roles_defaults():
    with open(os.path.join(ROOT, "roles", "admin_client_tls", "defaults", "main.yml"), encoding="utf-8") as handle:
        defaults = yaml.safe_load(handle)
    with open(os.path.join(ROOT, "roles", "quota_plugin", "vars", "main.yml"), encoding="utf-8") as handle:
        mapping = yaml.safe_load(handle)["quota_plugin_admin_client_tls"]
    for setting, template in mapping.items():
        variable, fallback = re.fullmatch(r"\{\{ (admin_client_tls_\w+) \| default\((.*)\) \}\}", template).groups()
        assert variable == "admin_client_tls_" + setting
        assert yaml.safe_load(fallback) == defaults[variable], variable
