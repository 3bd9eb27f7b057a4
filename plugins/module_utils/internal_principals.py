# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The principal a client of the collection's own connects as, and keeping the snapshot publisher out of the throttle
it serves: seed 000 has the volume-usage publisher never throttled, or the observations stop exactly while producers
are held. Pure: the connection options in, the principal out; no Kafka client."""

from __future__ import absolute_import, division, print_function

from typing import Any, Mapping, Optional

from ansible_collections.headroom.kafka.plugins.module_utils.disk_guard import PRINCIPAL_PREFIX

__metaclass__ = type

ANONYMOUS = PRINCIPAL_PREFIX + "ANONYMOUS"


def connection_principal(params: Mapping[str, Any]) -> Optional[str]:
    """The principal Kafka's default principal builder gives a connection made with these connection options:
    ``User:<sasl_username>`` under SASL, ``User:ANONYMOUS`` under PLAINTEXT or TLS without a client certificate, and
    None with a client certificate (the brokers' ssl.principal.mapping.rules make its name from the certificate)."""
    protocol = (params.get("security_protocol") or "PLAINTEXT").upper()
    if protocol.startswith("SASL_") and params.get("sasl_username"):
        return PRINCIPAL_PREFIX + params["sasl_username"]
    if protocol == "SSL" and params.get("ssl_certfile"):
        return None
    return ANONYMOUS


def publisher_exclusion(params: Mapping[str, Any], excluded: list, topic: str) -> str:
    """Adds the user the guard publishes ``topic`` as to ``excluded`` (the declaration's excluded user names) when it
    is named and not there yet; returns the sentence the guard says about it."""
    principal = connection_principal(params)
    if principal is None:
        return (
            "snapshots are published to {0} as the principal the brokers make of the client certificate; list it in "
            "excluded_principals, or the publications wait while producers are held".format(topic)
        )
    if principal == ANONYMOUS:
        return (
            "snapshots are published to {0} as {1}, held with every unauthenticated producer while producers are held "
            "(excluding {1} would free them all); each broker's newest observation is published once the hold ends. "
            "Connect with SASL to have the publisher excluded".format(topic, ANONYMOUS)
        )
    name = principal[len(PRINCIPAL_PREFIX) :]
    if name in excluded:
        return "snapshots are published to {0} as {1}, which excluded_principals lists".format(topic, principal)
    excluded.append(name)
    return "snapshots are published to {0} as {1}, excluded from the throttle as its publisher".format(topic, principal)
