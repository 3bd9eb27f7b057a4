# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The principal a client of the collection's own connects as, and keeping the snapshot publisher out of the throttle
it serves: seed 000 has the volume-usage publisher never throttled, or the observations stop exactly while producers
are held. Pure: the connection options in, the principal out; no Kafka client."""

from __future__ import absolute_import, division, print_function

from typing import Any, Mapping, Optional

from ansible_collections.headroom.kafka.plugins.module_utils import quota_spec
from ansible_collections.headroom.kafka.plugins.module_utils.disk_guard import (
    PRINCIPAL_PREFIX,
    PRODUCE,
    Declaration,
    GuardError,
)

__metaclass__ = type

ANONYMOUS = PRINCIPAL_PREFIX + "ANONYMOUS"
# The snapshot publisher's client id: what excludes it when it connects as User:ANONYMOUS.
PUBLISHER_CLIENT_ID = "headroom-guard-snapshots"
USER, CLIENT_ID = "user", "client-id"  # quota entity types, as Kafka names them


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


def exclude_publisher(
    params: Mapping[str, Any],
    declaration: Declaration,
    topic: str,
    publisher_principal: Optional[str] = None,
    option: str = "snapshot_publisher_principal",
    sets_quotas: bool = True,
) -> str:
    """Keeps the guard's snapshot publisher out of the throttle of ``declaration`` (changed in place) and returns the
    sentence the guard says about it; raises GuardError, naming ``option``, when it cannot.

    * SASL: the user joins the excluded users (``publisher_principal``, when given, must be that user).
    * A client certificate: the brokers make the principal from the certificate's subject with their own
      ssl.principal.mapping.rules, which the guard cannot read; ``publisher_principal`` names it, or the guard refuses.
    * User:ANONYMOUS (PLAINTEXT, or TLS without a client certificate): excluding the user would free every
      unauthenticated producer, so the publisher's client id is excluded under the <default> user instead.

    A guard that sets no quotas (``sets_quotas`` false: observe only, the quota plugin enforces) excludes nobody;
    the sentence says that the plugin's excluded principals must list the publisher."""
    connected_as = connection_principal(params)
    if publisher_principal is not None:
        if (
            not isinstance(publisher_principal, str)
            or not publisher_principal.startswith(PRINCIPAL_PREFIX)
            or (publisher_principal == PRINCIPAL_PREFIX)
        ):
            raise GuardError(
                "{0} must be a principal written User:<name> (got {1!r})".format(option, publisher_principal)
            )
        if connected_as is not None and publisher_principal != connected_as:
            raise GuardError(
                "{0} {1!r} is not the principal the guard publishes to {2} as: with these connection options the "
                "brokers see {3}; {0} is for a client certificate's principal, leave it unset otherwise".format(
                    option, publisher_principal, topic, connected_as
                )
            )
        connected_as = publisher_principal
    if not sets_quotas and connected_as == ANONYMOUS:
        return (
            "snapshots are published to {0} as {1}; the guard sets no quotas, and the quota plugin that enforces "
            "excludes principals only: excluding {1} would free every unauthenticated producer, so publish over SASL "
            "or a client certificate to keep the publisher out of its throttle".format(topic, ANONYMOUS)
        )
    if not sets_quotas:
        return (
            "snapshots are published to {0} as {1}; the guard sets no quotas, so the quota plugin that enforces must "
            "list it in its excluded principals".format(
                topic, connected_as or "the principal the brokers make of the client certificate"
            )
        )
    if connected_as is None:
        raise GuardError(
            "{0} is required with snapshot topic {1!r} over a client certificate (ssl_certfile {2!r}): the brokers "
            "make its principal from the certificate's subject with their ssl.principal.mapping.rules, and the guard "
            "must exclude it from the throttle it serves. Under the default rule it is User: followed by the subject "
            "as 'openssl x509 -noout -subject -nameopt RFC2253' prints it".format(
                option, topic, params.get("ssl_certfile")
            )
        )
    if connected_as == ANONYMOUS and ANONYMOUS[len(PRINCIPAL_PREFIX) :] not in declaration.excluded:
        return _exclude_client_id(declaration, topic)
    name = connected_as[len(PRINCIPAL_PREFIX) :]
    if name in declaration.excluded:
        return "snapshots are published to {0} as {1}, which excluded_principals lists".format(topic, connected_as)
    declaration.excluded.append(name)
    return "snapshots are published to {0} as {1}, excluded from the throttle as its publisher".format(
        topic, connected_as
    )


def _exclude_client_id(declaration: Declaration, topic: str) -> str:
    anonymous = ANONYMOUS[len(PRINCIPAL_PREFIX) :]
    for entity, values in declaration.declared.values():
        # Kafka applies any entity of the user itself (alone, with the <default> client id or with the publisher's)
        # before a <default> user entity: the publisher would get that entity's scaled rate.
        if (
            entity.get(USER) == anonymous
            and entity.get(CLIENT_ID, PUBLISHER_CLIENT_ID) in (None, PUBLISHER_CLIENT_ID)
            and PRODUCE in values
        ):
            raise GuardError(
                "quotas declares a producer_byte_rate for {0}, which Kafka applies to the snapshot publisher "
                "(User:ANONYMOUS) before its client id's exclusion: add User:ANONYMOUS to excluded_principals, declare "
                "no produce rate for it, or publish snapshot topic {1!r} over SASL or a client certificate".format(
                    quota_spec.describe_entity(entity), topic
                )
            )
    if PUBLISHER_CLIENT_ID not in declaration.excluded_client_ids:
        declaration.excluded_client_ids.append(PUBLISHER_CLIENT_ID)
    return (
        "snapshots are published to {0} as {1} with client id {2}, excluded from the throttle by a quota for "
        "user <default> and client id {2} (any client that takes that client id and whose user has no quota of its "
        "own is excluded with it; connect with SASL to exclude the publisher by its user)".format(
            topic, ANONYMOUS, PUBLISHER_CLIENT_ID
        )
    )
