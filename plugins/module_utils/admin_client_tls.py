# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The admin client's TLS material as the admin_client_tls role places it on each broker: the files' names, and the
quota plugin's admin client settings that use them (the quota_plugin role's admin, unless the inventory gives its
own), with no I/O."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from typing import Any, Dict, Mapping

# The files the role may be given (admin_client_tls_files), by key.
FILE_KEYS = ("truststore", "keystore", "ca_pem", "cert_pem", "key_pem")
STORE_TYPES = ("PKCS12", "JKS")
# The private key, then the certificate chain, in one file: the PEM key store Kafka reads from ssl.keystore.location.
PEM_KEY_STORE = "admin.pem"


class AdminClientTlsError(ValueError):
    """Settings the admin client cannot use; the message names the variable, the value and what is allowed."""


def _store_type(name: str, value: Any) -> str:
    if value not in STORE_TYPES:
        raise AdminClientTlsError("{0} must be one of {1} (got {2!r})".format(name, ", ".join(STORE_TYPES), value))
    return value


def file_names(truststore_type: str = "PKCS12", keystore_type: str = "PKCS12") -> Dict[str, str]:
    """The name each given file gets in the role's directory, and the PEM key store's (``pem_key_store``)."""
    extension = {"PKCS12": "p12", "JKS": "jks"}
    return {
        "truststore": "truststore." + extension[_store_type("admin_client_tls_truststore_type", truststore_type)],
        "keystore": "keystore." + extension[_store_type("admin_client_tls_keystore_type", keystore_type)],
        "ca_pem": "ca.crt",
        "cert_pem": "admin.crt",
        "key_pem": "admin.key",
        "pem_key_store": PEM_KEY_STORE,
    }


def plugin_admin(settings: Mapping[str, Any]) -> Dict[str, Any]:
    """The quota plugin's admin client settings (quota_plugin_spec.admin_lines' form) for the files the role placed.

    ``settings``: the role's variables without their ``admin_client_tls_`` prefix - ``dir``, ``files`` (the keys
    given), ``bootstrap_servers``, ``security_protocol``, ``truststore_type``, ``keystore_type``,
    ``truststore_password``, ``keystore_password``, ``key_password``, ``endpoint_identification_algorithm``.
    The trust store is the PKCS12/JKS one or the CA's PEM file; the key store the PKCS12/JKS one or the PEM key store
    the role writes from the certificate and its key. Without a key store, the client has no certificate to show (a
    listener that requires one refuses it; the plugin then reports its brokers as not observed)."""
    files = dict((key, path) for key, path in (settings.get("files") or {}).items() if path)
    unknown = sorted(set(files) - set(FILE_KEYS))
    if unknown:
        raise AdminClientTlsError(
            "admin_client_tls_files has unknown key(s) {0}; allowed: {1}".format(
                ", ".join(unknown), ", ".join(FILE_KEYS)
            )
        )
    if ("cert_pem" in files) != ("key_pem" in files):
        raise AdminClientTlsError(
            "admin_client_tls_files must give cert_pem and key_pem together (got only {0})".format(
                "cert_pem" if "cert_pem" in files else "key_pem"
            )
        )
    for store, pem in (("truststore", "ca_pem"), ("keystore", "cert_pem")):
        if store in files and pem in files:
            raise AdminClientTlsError(
                "admin_client_tls_files gives both {0} and {1}: give the {0} as a file or as PEM, not both".format(
                    store, pem
                )
            )
    directory = str(settings["dir"]).rstrip("/")
    names = file_names(settings.get("truststore_type", "PKCS12"), settings.get("keystore_type", "PKCS12"))
    ssl: Dict[str, Any] = {}
    if "truststore" in files:
        ssl.update(
            truststore_location="{0}/{1}".format(directory, names["truststore"]),
            truststore_type=settings.get("truststore_type", "PKCS12"),
            truststore_password=settings.get("truststore_password") or "",
        )
    elif "ca_pem" in files:
        ssl.update(truststore_location="{0}/{1}".format(directory, names["ca_pem"]), truststore_type="PEM")
    if "keystore" in files:
        ssl.update(
            keystore_location="{0}/{1}".format(directory, names["keystore"]),
            keystore_type=settings.get("keystore_type", "PKCS12"),
            keystore_password=settings.get("keystore_password") or "",
        )
    elif "cert_pem" in files:
        ssl.update(keystore_location="{0}/{1}".format(directory, names["pem_key_store"]), keystore_type="PEM")
    if settings.get("key_password") and ("keystore" in files or "cert_pem" in files):
        ssl["key_password"] = settings["key_password"]
    ssl["endpoint_identification_algorithm"] = settings.get("endpoint_identification_algorithm") or ""
    for password in ("truststore_password", "keystore_password"):
        if password in ssl and not ssl[password]:
            del ssl[password]  # a store without a password: Kafka reads it without one
    return {
        "bootstrap_servers": settings["bootstrap_servers"],
        "security_protocol": settings.get("security_protocol") or "SSL",
        "ssl": ssl,
    }
