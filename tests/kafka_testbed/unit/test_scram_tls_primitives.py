"""Tests for kafka_testbed.security: SCRAM against kafka-python's client, TLS contexts over real sockets, SSL
principals."""
# pylint: disable=missing-function-docstring

import base64
import contextlib
import hashlib
import json
import os
import shutil
import socket
import ssl
import stat
import subprocess
import tempfile
import threading

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.name import _ASN1Type
from cryptography.x509.oid import NameOID
from kafka.net.sasl.scram import SaslMechanismScram, ScramClient

from kafka_testbed import security
from kafka_testbed.security import AuthenticationError, IllegalSaslStateError, ScramServer

GENERIC = "Authentication failed during authentication due to invalid credentials with SASL mechanism {}"


# --------------------------------------------------------------------------------------------------------------------
# SCRAM
# --------------------------------------------------------------------------------------------------------------------


def _users(mechanism, **passwords):
    credentials = {name: security.scram_credential(password, mechanism) for name, password in passwords.items()}
    return credentials.get


def _kafka_python_exchange(server, username, password):
    """Drive kafka-python's SASL/SCRAM mechanism (what KafkaClient runs over SaslAuthenticate) against the server."""
    client = SaslMechanismScram(
        sasl_plain_username=username, sasl_plain_password=password, sasl_mechanism=server.mechanism
    )
    while not client.is_done():
        client.receive(server.evaluate(client.auth_bytes()))
    return client


def _bare_exchange(server, client, first, final_extra=b""):
    """Send a hand-made client-first message, then let kafka-python's ScramClient compute the proof."""
    bare = first.split(b",", 2)[2]
    client.auth_message = bare
    client.nonce = dict(item.split(b"=", 1) for item in bare.split(b","))[b"r"]
    client.process_server_first_message(server.evaluate(first))
    final = client.final_message()
    if final_extra:
        head, proof = final.rsplit(b",p=", 1)
        final = head + final_extra + b",p=" + proof
    client.process_server_final_message(server.evaluate(final))


@pytest.mark.parametrize("mechanism", security.MECHANISMS)
def test_scram_round_trip_with_kafka_python(mechanism):
    server = ScramServer(mechanism, _users(mechanism, alice="alice-secret", bob="other"))
    client = _kafka_python_exchange(server, "alice", "alice-secret")
    assert client.is_authenticated()  # the client checked the server signature
    assert server.complete is True
    assert server.username == "alice"
    assert server.state == "COMPLETE"
    assert server.token_authenticated is False


@pytest.mark.parametrize("mechanism", security.MECHANISMS)
def test_scram_wrong_password_fails(mechanism):
    server = ScramServer(mechanism, _users(mechanism, alice="alice-secret"))
    with pytest.raises(AuthenticationError) as failure:
        _kafka_python_exchange(server, "alice", "wrong")
    assert failure.value.message == GENERIC.format(mechanism)
    assert str(failure.value) == GENERIC.format(mechanism)
    assert failure.value.reason == "Invalid client credentials"
    assert failure.value.error_code == 58
    assert server.complete is False and server.username is None
    assert server.state == "FAILED"
    with pytest.raises(IllegalSaslStateError) as again:
        server.evaluate(b"n,,n=alice,r=abc")
    assert again.value.error_code == 34
    assert str(again.value) == "Unexpected challenge in Sasl server state FAILED"


@pytest.mark.parametrize("mechanism", security.MECHANISMS)
def test_scram_unknown_user_fails_with_the_same_message(mechanism):
    server = ScramServer(mechanism, _users(mechanism, alice="alice-secret"))
    with pytest.raises(AuthenticationError) as failure:
        _kafka_python_exchange(server, "mallory", "alice-secret")
    assert failure.value.message == GENERIC.format(mechanism)
    assert failure.value.reason == "Authentication failed: Invalid user credentials"
    assert server.complete is False


def test_scram_credential_of_the_other_mechanism_fails():
    server = ScramServer("SCRAM-SHA-512", _users("SCRAM-SHA-256", alice="pw"))
    with pytest.raises(AuthenticationError, match="SCRAM-SHA-512"):
        _kafka_python_exchange(server, "alice", "pw")


def test_scram_rfc7677_test_vector(monkeypatch):
    """RFC 7677 section 3, with the server nonce pinned: proves the exact message formats and key derivation."""
    monkeypatch.setattr(security, "_server_nonce", lambda: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    credential = security.scram_credential(
        "pencil", "SCRAM-SHA-256", 4096, base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    )
    server = ScramServer("SCRAM-SHA-256", {"user": credential}.get)
    assert server.evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO") == (
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    final = (
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert server.evaluate(final) == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert server.username == "user"


def test_scram_server_nonce_extends_the_client_nonce():
    server = ScramServer("SCRAM-SHA-256", _users("SCRAM-SHA-256", alice="pw"))
    reply = dict(item.split("=", 1) for item in server.evaluate(b"n,,n=alice,r=clientnonce").decode().split(","))
    assert reply["r"].startswith("clientnonce") and len(reply["r"]) > len("clientnonce") + 15
    assert reply["i"] == "4096"


def test_scram_escaped_username():
    credential = security.scram_credential("pw", "SCRAM-SHA-256")
    seen = []
    server = ScramServer("SCRAM-SHA-256", lambda name: seen.append(name) or (credential if name == "a,b=c" else None))
    _bare_exchange(server, ScramClient("a=2Cb=3Dc", "pw", "SCRAM-SHA-256"), b"n,,n=a=2Cb=3Dc,r=nonce1")
    assert seen == ["a,b=c"]
    assert server.username == "a,b=c"


@pytest.mark.parametrize(
    "first",
    [
        b"n,,n=a=3Fb,r=nonce",  # '=' must start =2C or =3D
        b"n,,n=j\xc3\xb6rg,r=nonce",  # Kafka's saslname is ASCII only
        b"y,,n=alice,r=nonce",  # Kafka accepts only the gs2 header "n"
        b"p=tls-server-end-point,,n=alice,r=nonce",
        b"n,,n=,r=nonce",
        b"n,,n=alice",
        b"garbage",
        b"",
    ],
)
def test_scram_malformed_or_unsupported_client_first(first):
    server = ScramServer("SCRAM-SHA-256", _users("SCRAM-SHA-256", alice="pw"))
    with pytest.raises(AuthenticationError) as failure:
        server.evaluate(first)
    assert failure.value.message == GENERIC.format("SCRAM-SHA-256")
    assert server.state == "FAILED"


def test_scram_authorization_id():
    lookup = _users("SCRAM-SHA-256", alice="pw")
    server = ScramServer("SCRAM-SHA-256", lookup)
    _bare_exchange(server, ScramClient("alice", "pw", "SCRAM-SHA-256"), b"n,a=alice,n=alice,r=nonce2")
    assert server.username == "alice"

    server = ScramServer("SCRAM-SHA-256", lookup)
    with pytest.raises(AuthenticationError) as failure:
        server.evaluate(b"n,a=admin,n=alice,r=nonce3")
    # Kafka's one SaslAuthenticationException: its own message goes to the client.
    assert (
        failure.value.message
        == "Authentication failed: Client requested an authorization id that is different from username"
    )


def test_scram_unknown_extensions_are_ignored_but_signed():
    server = ScramServer("SCRAM-SHA-512", _users("SCRAM-SHA-512", alice="pw"))
    _bare_exchange(server, ScramClient("alice", "pw", "SCRAM-SHA-512"), b"n,,n=alice,r=nonce4,foo=bar,x=1")
    assert server.complete and server.extensions == {"foo": "bar", "x": "1"}


def test_scram_final_message_extensions_are_accepted():
    server = ScramServer("SCRAM-SHA-256", _users("SCRAM-SHA-256", alice="pw"))
    _bare_exchange(server, ScramClient("alice", "pw", "SCRAM-SHA-256"), b"n,,n=alice,r=nonce5", final_extra=b",ext=1")
    assert server.complete


def test_scram_token_authentication():
    token = security.scram_credential("token-hmac", "SCRAM-SHA-256")
    tokens = {"tok-1": dict(token, owner="alice")}
    server = ScramServer("SCRAM-SHA-256", _users("SCRAM-SHA-256"), token_lookup=tokens.get)
    _bare_exchange(server, ScramClient("tok-1", "token-hmac", "SCRAM-SHA-256"), b"n,,n=tok-1,r=nonce6,tokenauth=true")
    assert server.username == "alice" and server.token_authenticated is True

    plain = ScramServer("SCRAM-SHA-256", {"tok-1": token}.get)  # no token support: refused even if a user matches
    with pytest.raises(AuthenticationError) as failure:
        plain.evaluate(b"n,,n=tok-1,r=nonce7,tokenauth=true")
    assert failure.value.message == GENERIC.format("SCRAM-SHA-256")
    assert "Invalid tokenId" in failure.value.reason


def test_scram_nonce_must_match():
    server = ScramServer("SCRAM-SHA-256", _users("SCRAM-SHA-256", alice="pw"))
    client = ScramClient("alice", "pw", "SCRAM-SHA-256")
    client.process_server_first_message(server.evaluate(client.first_message()))
    final = client.final_message().replace(b",r=", b",r=x", 1)
    with pytest.raises(AuthenticationError) as failure:
        server.evaluate(final)
    assert failure.value.reason == "Invalid client nonce in the final client message."


@pytest.mark.parametrize("final", [b"c=biws,r={nonce},p=AAAA", b"c=biws,r={nonce}", b"nonsense"])
def test_scram_bad_final_message(final):
    server = ScramServer("SCRAM-SHA-256", _users("SCRAM-SHA-256", alice="pw"))
    nonce = dict(item.split("=", 1) for item in server.evaluate(b"n,,n=alice,r=n8").decode().split(","))["r"]
    with pytest.raises(AuthenticationError, match="invalid credentials"):
        server.evaluate(final.replace(b"{nonce}", nonce.encode()))


def test_scram_lookup_errors_and_bad_credentials_fail_generically():
    def broken(_name):
        raise RuntimeError("metadata unavailable")

    for lookup in (
        broken,
        lambda name: {"salt": "!!", "iterations": 4096, "stored_key": "", "server_key": ""},
        lambda name: {},
    ):
        server = ScramServer("SCRAM-SHA-256", lookup)
        with pytest.raises(AuthenticationError) as failure:
            server.evaluate(b"n,,n=alice,r=n9")
        assert failure.value.message == GENERIC.format("SCRAM-SHA-256")
        assert "Credentials could not be obtained" in failure.value.reason


def test_scram_stored_iterations_below_minimum_fail():
    weak = dict(security.scram_credential("pw", "SCRAM-SHA-256"), iterations=1000)
    server = ScramServer("SCRAM-SHA-256", {"alice": weak}.get)
    with pytest.raises(AuthenticationError) as failure:
        server.evaluate(b"n,,n=alice,r=n10")
    assert failure.value.reason == "Iterations 1000 is less than the minimum 4096 for SCRAM_SHA_256"


def test_scram_reauthentication_message_and_state_errors():
    server = ScramServer("SCRAM-SHA-512", _users("SCRAM-SHA-512"), reauthentication=True)
    with pytest.raises(AuthenticationError) as failure:
        server.evaluate(b"n,,n=alice,r=n11")
    assert failure.value.message == (
        "Authentication failed during re-authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"
    )
    done = ScramServer("SCRAM-SHA-256", _users("SCRAM-SHA-256", alice="pw"))
    _kafka_python_exchange(done, "alice", "pw")
    with pytest.raises(IllegalSaslStateError, match="state COMPLETE"):
        done.evaluate(b"n,,n=alice,r=n12")
    with pytest.raises(ValueError, match="PLAIN"):
        ScramServer("PLAIN", dict.get)


def test_scram_credential_fields():
    credential = security.scram_credential("pw", "SCRAM-SHA-512", iterations=8192, salt=b"0123456789abcdef")
    assert set(credential) == {"salt", "iterations", "stored_key", "server_key"}
    assert json.loads(json.dumps(credential)) == credential
    assert credential["salt"] == base64.b64encode(b"0123456789abcdef").decode()
    assert credential["iterations"] == 8192
    assert len(base64.b64decode(credential["stored_key"])) == 64 == len(base64.b64decode(credential["server_key"]))
    assert credential == security.scram_credential("pw", "SCRAM-SHA-512", iterations=8192, salt=b"0123456789abcdef")
    assert (
        security.scram_credential("pw", "SCRAM-SHA-512")["salt"]
        != security.scram_credential("pw", "SCRAM-SHA-512")["salt"]
    )
    salted = hashlib.pbkdf2_hmac("sha512", b"pw", b"0123456789abcdef", 8192)
    assert (
        security.scram_credential_from_salted_password(salted, b"0123456789abcdef", 8192, "SCRAM-SHA-512") == credential
    )


@pytest.mark.parametrize("iterations, needle", [(1000, "1000"), (4095, "4095"), (16385, "16385"), (True, "True")])
def test_scram_credential_iteration_limits(iterations, needle):
    with pytest.raises(ValueError, match=needle):
        security.scram_credential("pw", "SCRAM-SHA-256", iterations=iterations)


def test_scram_credential_limits_inclusive_and_unknown_mechanism():
    assert security.scram_credential("pw", "SCRAM-SHA-256", iterations=16384)["iterations"] == 16384
    with pytest.raises(ValueError, match="SCRAM-SHA-1"):
        security.scram_credential("pw", "SCRAM-SHA-1")


# --------------------------------------------------------------------------------------------------------------------
# TLS material and broker contexts
# --------------------------------------------------------------------------------------------------------------------


@pytest.fixture(name="pki", scope="module")
def fixture_pki(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("pki"))
    ca_cert, ca_key = security.make_ca(directory)
    other_dir = os.path.join(directory, "other")
    other_ca = security.make_ca(other_dir, "another-ca")
    return {
        "dir": directory,
        "ca": ca_cert,
        "ca_key": ca_key,
        "broker": security.make_certificate(directory, "broker", ca_cert, ca_key, "localhost", client=False),
        "locked": security.make_certificate(
            directory, "locked", ca_cert, ca_key, "localhost", key_password="s3cret pw", key_type="rsa"
        ),
        "admin": security.make_certificate(
            directory, "admin", ca_cert, ca_key, "admin", organization="headroom", server=False, sans=()
        ),
        "stranger": security.make_certificate(other_dir, "stranger", *other_ca, "stranger", server=False),
    }


def _broker_props(pki, **extra):
    props = {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": pki["broker"]["pem"],
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": pki["ca"],
    }
    props.update({key.replace("_", "."): value for key, value in extra.items()})
    return props


@contextlib.contextmanager
def _serve_once(context):
    """A one-connection TLS server on 127.0.0.1 that answers with the client's Kafka principal."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(20)
    result = {}

    def run():
        try:
            conn, _ignored = listener.accept()
        except OSError as exc:
            result["error"] = exc
            return
        with conn:
            conn.settimeout(20)
            try:
                with context.wrap_socket(conn, server_side=True) as tls:
                    result["principal"] = security.ssl_principal(tls)
                    result["version"] = tls.version()
                    tls.sendall(result["principal"].encode() + b"\n")
            except (ssl.SSLError, OSError) as exc:
                result["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], result
    finally:
        thread.join(30)
        listener.close()


def _client_context(pki, cert=None, **versions):
    context = ssl.create_default_context(cafile=pki["ca"])
    if cert is not None:
        context.load_cert_chain(cert["cert"], cert["key"])
    for name, value in versions.items():
        setattr(context, name, value)
    return context


def _connect(port, context):
    """Handshake and read the server's answer; None when the server refused the connection."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=20) as raw:
            with context.wrap_socket(raw, server_hostname="localhost") as tls:
                data = tls.recv(1024)
                return data.decode().strip() or None
    except (ssl.SSLError, OSError):
        return None


def test_pki_files(pki):
    broker = pki["broker"]
    assert broker["chain"] == broker["pem"] and broker["ca"] == pki["ca"]
    for path in (pki["ca_key"], broker["key"], broker["pem"], pki["locked"]["key"], pki["locked"]["pem"]):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path
    assert stat.S_IMODE(os.stat(broker["cert"]).st_mode) == 0o644
    with open(broker["pem"], encoding="ascii") as handle:
        pem = handle.read()
    assert pem.startswith("-----BEGIN PRIVATE KEY-----") and pem.count("-----BEGIN CERTIFICATE-----") == 2
    with open(pki["locked"]["key"], encoding="ascii") as handle:
        assert handle.read().startswith("-----BEGIN ENCRYPTED PRIVATE KEY-----")
    cert = x509.load_pem_x509_certificate(open(broker["cert"], "rb").read())  # pylint: disable=consider-using-with
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["localhost"]
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    with open(pki["locked"]["key"], "rb") as handle:
        assert isinstance(serialization.load_pem_private_key(handle.read(), b"s3cret pw"), rsa.RSAPrivateKey)


def test_mutual_tls_principal(pki):
    context = security.server_ssl_context(_broker_props(pki, ssl_client_auth="required"))
    assert context.verify_mode == ssl.CERT_REQUIRED
    with _serve_once(context) as (port, result):
        answer = _connect(port, _client_context(pki, pki["admin"]))
    assert answer == "User:CN=admin,O=headroom"
    assert result["principal"] == "User:CN=admin,O=headroom"


def test_required_client_auth_refuses_a_client_without_certificate(pki):
    context = security.server_ssl_context(_broker_props(pki, ssl_client_auth="required"))
    with _serve_once(context) as (port, result):
        answer = _connect(port, _client_context(pki))
    assert answer is None
    assert isinstance(result.get("error"), ssl.SSLError)


def test_required_client_auth_refuses_an_untrusted_certificate(pki):
    context = security.server_ssl_context(_broker_props(pki, ssl_client_auth="required"))
    with _serve_once(context) as (port, result):
        answer = _connect(port, _client_context(pki, pki["stranger"]))
    assert answer is None and "error" in result


@pytest.mark.parametrize(
    "client_auth, expected", [("requested", "User:ANONYMOUS"), ("none", "User:ANONYMOUS"), (None, "User:ANONYMOUS")]
)
def test_optional_client_auth_without_certificate_is_anonymous(pki, client_auth, expected):
    props = _broker_props(pki) if client_auth is None else _broker_props(pki, ssl_client_auth=client_auth)
    with _serve_once(security.server_ssl_context(props)) as (port, _ignored):
        assert _connect(port, _client_context(pki)) == expected


def test_requested_client_auth_with_certificate(pki):
    context = security.server_ssl_context(_broker_props(pki, ssl_client_auth="requested"))
    assert context.verify_mode == ssl.CERT_OPTIONAL
    with _serve_once(context) as (port, _ignored):
        assert _connect(port, _client_context(pki, pki["admin"])) == "User:CN=admin,O=headroom"


def test_encrypted_key_with_password(pki):
    props = _broker_props(
        pki, ssl_keystore_location=pki["locked"]["pem"], ssl_key_password="s3cret pw", ssl_client_auth="required"
    )
    with _serve_once(security.server_ssl_context(props)) as (port, _ignored):
        assert _connect(port, _client_context(pki, pki["admin"])) == "User:CN=admin,O=headroom"


def test_encrypted_key_password_rules(pki):
    locked = _broker_props(pki, ssl_keystore_location=pki["locked"]["pem"])
    with pytest.raises(ValueError, match="encrypted, so ssl.key.password is required"):
        security.server_ssl_context(locked)
    with pytest.raises(ValueError, match="wrong ssl.key.password"):
        security.server_ssl_context(dict(locked, **{"ssl.key.password": "nope"}))
    with pytest.raises(ValueError, match="not encrypted"):
        security.server_ssl_context(_broker_props(pki, ssl_key_password="s3cret pw"))


def test_inline_pem_configs(pki):
    with open(pki["locked"]["key"], encoding="ascii") as handle:
        key = handle.read()
    with open(pki["locked"]["pem"], encoding="ascii") as handle:
        chain = handle.read()[len(key) :]
    with open(pki["ca"], encoding="ascii") as handle:
        ca = handle.read()
    props = {
        "ssl.keystore.type": "PEM",
        "ssl.truststore.type": "PEM",
        "ssl.client.auth": "required",
        "ssl.key.password": "s3cret pw",
        # Kafka's PEM parser also takes a block on one line, as a value squeezed into one properties line may be.
        "ssl.keystore.key": " ".join(key.split()),
        "ssl.keystore.certificate.chain": chain,
        "ssl.truststore.certificates": ca,
    }
    with _serve_once(security.server_ssl_context(props)) as (port, _ignored):
        assert _connect(port, _client_context(pki, pki["admin"])) == "User:CN=admin,O=headroom"


def test_inline_keystore_leaves_no_file_behind(pki, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with open(pki["broker"]["pem"], encoding="ascii") as handle:
        pem = handle.read()
    security.server_ssl_context(
        {"ssl.keystore.type": "PEM", "ssl.keystore.key": pem, "ssl.keystore.certificate.chain": pem}
    )
    security.server_ssl_context(_broker_props(pki))
    assert not os.listdir(tmp_path)


@pytest.mark.parametrize(
    "change, needle",
    [
        (
            {"ssl.keystore.type": None},
            "ssl.keystore.type=JKS (Kafka's default) is not supported: only PEM is supported by this test broker",
        ),
        (
            {"ssl.keystore.type": "PKCS12"},
            "ssl.keystore.type=PKCS12 is not supported: only PEM is supported by this test broker",
        ),
        ({"ssl.keystore.type": "pem"}, "ssl.keystore.type=pem is not supported"),
        (
            {"ssl.truststore.type": "JKS"},
            "ssl.truststore.type=JKS is not supported: only PEM is supported by this test broker",
        ),
        ({"ssl.truststore.type": None}, "ssl.truststore.type=JKS (Kafka's default) is not supported"),
        ({"ssl.keystore.location": None}, "needs a key store"),
        (
            {"ssl.keystore.key": "x", "ssl.keystore.certificate.chain": "x"},
            "Both SSL key store location and separate private key",
        ),
        ({"ssl.keystore.certificate.chain": "x"}, "certificate chain is specified, but private key is not"),
        ({"ssl.keystore.password": "pw"}, "SSL key store password cannot be specified with PEM format"),
        ({"ssl.truststore.password": "pw"}, "SSL trust store password cannot be specified for PEM format"),
        ({"ssl.truststore.certificates": "x"}, "Both SSL trust store location and separate trust certificates"),
        ({"ssl.client.auth": "REQUIRED"}, "Invalid value REQUIRED for configuration ssl.client.auth"),
        ({"ssl.enabled.protocols": "TLSv1.1"}, "leaves no protocol enabled"),
        ({"ssl.enabled.protocols": "TLSv1.2,TLSv9"}, "unsupported protocol"),
        (
            {"ssl.keystore.location": "/nonexistent/broker.pem"},
            "Failed to load PEM SSL keystore /nonexistent/broker.pem",
        ),
    ],
)
def test_configs_kafka_rejects(pki, change, needle):
    props = _broker_props(pki)
    for key, value in change.items():
        if value is None:
            props.pop(key)
        else:
            props[key] = value
    with pytest.raises(ValueError) as failure:
        security.server_ssl_context(props)
    assert needle in str(failure.value)


def test_inline_key_without_chain(pki):
    with open(pki["broker"]["key"], encoding="ascii") as handle:
        key = handle.read()
    with pytest.raises(ValueError, match="certificate chain is not specified"):
        security.server_ssl_context({"ssl.keystore.type": "PEM", "ssl.keystore.key": key})


def test_pkcs1_key_and_mismatched_key_are_refused(pki, tmp_path):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    with open(pki["broker"]["cert"], encoding="ascii") as handle:
        cert = handle.read()
    pkcs1 = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    )
    props = {"ssl.keystore.type": "PEM", "ssl.keystore.key": pkcs1.decode(), "ssl.keystore.certificate.chain": cert}
    with pytest.raises(ValueError, match="not PKCS#8"):
        security.server_ssl_context(props)
    pkcs8 = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    with pytest.raises(ValueError, match="does not belong to the first certificate"):
        security.server_ssl_context(dict(props, **{"ssl.keystore.key": pkcs8.decode()}))
    two_keys = tmp_path / "two.pem"
    two_keys.write_text(pkcs8.decode() + open(pki["broker"]["pem"], encoding="ascii").read())  # pylint: disable=consider-using-with
    with pytest.raises(ValueError, match="Expected one private key, but found 2"):
        security.server_ssl_context({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(two_keys)})


def test_enabled_protocols(pki):
    context = security.server_ssl_context(_broker_props(pki, ssl_enabled_protocols="TLSv1.1, TLSv1.2"))
    assert context.maximum_version == ssl.TLSVersion.TLSv1_2
    with _serve_once(context) as (port, result):
        assert _connect(port, _client_context(pki)) == "User:ANONYMOUS"
    assert result["version"] == "TLSv1.2"
    context = security.server_ssl_context(_broker_props(pki, ssl_enabled_protocols="TLSv1.3"))
    with _serve_once(context) as (port, _ignored):
        assert _connect(port, _client_context(pki, maximum_version=ssl.TLSVersion.TLSv1_2)) is None
    default = security.server_ssl_context(_broker_props(pki))
    assert (default.minimum_version, default.maximum_version) == (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3)


def test_listener_prefix_and_sasl_ssl_client_auth(pki):
    props = _broker_props(pki, ssl_client_auth="required")
    assert security.server_ssl_context(props, listener="SECURE").verify_mode == ssl.CERT_REQUIRED
    # On SASL_SSL listeners Kafka applies only the listener-prefixed ssl.client.auth.
    assert (
        security.server_ssl_context(props, listener="SASL_SSL", security_protocol="SASL_SSL").verify_mode
        == ssl.CERT_NONE
    )
    props["listener.name.sasl_ssl.ssl.client.auth"] = "requested"
    assert (
        security.server_ssl_context(props, listener="SASL_SSL", security_protocol="SASL_SSL").verify_mode
        == ssl.CERT_OPTIONAL
    )
    props["listener.name.secure.ssl.keystore.location"] = "/nonexistent/secure.pem"
    with pytest.raises(ValueError, match="/nonexistent/secure.pem"):
        security.server_ssl_context(props, listener="SECURE")
    security.server_ssl_context(props, listener="OTHER")


def test_truststore_certificates_are_anchors(pki, tmp_path):
    """Java trusts a trust store's certificates as they are: trusting only the client's own certificate works too."""
    props = _broker_props(pki, ssl_client_auth="required", ssl_truststore_location=pki["admin"]["cert"])
    with _serve_once(security.server_ssl_context(props)) as (port, _ignored):
        assert _connect(port, _client_context(pki, pki["admin"])) == "User:CN=admin,O=headroom"
    empty = tmp_path / "empty.pem"
    empty.write_text("nothing here\n")
    with pytest.raises(ValueError, match="No matching CERTIFICATE entries"):
        security.server_ssl_context(_broker_props(pki, ssl_truststore_location=str(empty)))


# --------------------------------------------------------------------------------------------------------------------
# Principals
# --------------------------------------------------------------------------------------------------------------------

_A = x509.NameAttribute
# Expected strings are X500Principal.getName() of the same DER on OpenJDK 17.
NAME_CASES = [
    (x509.Name([_A(NameOID.ORGANIZATION_NAME, "headroom"), _A(NameOID.COMMON_NAME, "admin")]), "CN=admin,O=headroom"),
    (
        x509.Name(
            [
                _A(NameOID.COUNTRY_NAME, "DE"),
                _A(NameOID.STATE_OR_PROVINCE_NAME, "Berlin"),
                _A(NameOID.LOCALITY_NAME, "Berlin"),
                _A(NameOID.ORGANIZATIONAL_UNIT_NAME, "ops, team=1"),
                _A(NameOID.COMMON_NAME, ' lead #x;y<z>"q\\ '),
            ]
        ),
        'CN=\\ lead \\#x\\;y\\<z\\>\\"q\\\\\\ ,OU=ops\\, team\\=1,L=Berlin,ST=Berlin,C=DE',
    ),
    (
        x509.Name([_A(NameOID.EMAIL_ADDRESS, "a@b.c"), _A(NameOID.COMMON_NAME, "J\u00f6rg \u00dc")]),
        "CN=J\u00f6rg \u00dc,1.2.840.113549.1.9.1=#16056140622e63",
    ),
    (
        x509.Name(
            [
                _A(NameOID.DOMAIN_COMPONENT, "com"),
                _A(NameOID.DOMAIN_COMPONENT, "example"),
                _A(NameOID.USER_ID, "u1"),
                _A(NameOID.SERIAL_NUMBER, "42"),
                _A(NameOID.STREET_ADDRESS, "Main St 1"),
            ]
        ),
        "STREET=Main St 1,2.5.4.5=#13023432,UID=u1,DC=example,DC=com",
    ),
    (
        x509.Name(
            [
                x509.RelativeDistinguishedName(
                    [_A(NameOID.COMMON_NAME, "a+b"), _A(NameOID.ORGANIZATIONAL_UNIT_NAME, "x")]
                )
            ]
        ),
        "OU=x+CN=a\\+b",
    ),
    (
        x509.Name(
            [
                _A(NameOID.COMMON_NAME, "#hash"),
                _A(NameOID.ORGANIZATIONAL_UNIT_NAME, "ia5", _ASN1Type.IA5String),
                _A(NameOID.COMMON_NAME, "univ", _ASN1Type.UniversalString),
            ]
        ),
        "CN=#1c10000000750000006e0000006900000076,OU=ia5,CN=\\#hash",
    ),
    (
        x509.Name([_A(NameOID.COMMON_NAME, "cr\r"), _A(NameOID.COMMON_NAME, "   "), _A(NameOID.COMMON_NAME, "nul\0x")]),
        "CN=nul\\00x,CN=\\ \\ \\ ,CN=cr\\\r",
    ),
    (x509.Name([]), ""),
]


@pytest.mark.parametrize("name, expected", NAME_CASES)
def test_x500_name_rfc2253(name, expected):
    assert security.x500_name_rfc2253(name.public_bytes()) == expected


def test_principal_from_peer_cert(pki):
    assert security.principal_from_peer_cert(None) == "User:ANONYMOUS"
    assert security.principal_from_peer_cert(b"") == "User:ANONYMOUS"
    with open(pki["admin"]["cert"], "rb") as handle:
        der = x509.load_pem_x509_certificate(handle.read()).public_bytes(serialization.Encoding.DER)
    assert security.principal_from_peer_cert(der) == "User:CN=admin,O=headroom"


_JAVA_CHECK = r"""
import java.nio.file.*; import java.security.*; import java.security.spec.*; import java.util.*;
import javax.crypto.*; import javax.crypto.spec.*; import javax.security.auth.x500.X500Principal;

public class KafkaCheck {
    public static void main(String[] args) throws Exception {
        java.io.PrintStream out = new java.io.PrintStream(System.out, true, "UTF-8");
        for (int i = 0; i < args.length; i += 2) {
            if (args[i].equals("name")) {
                out.println(new X500Principal(Files.readAllBytes(Paths.get(args[i + 1]))).getName());
            } else {  // DefaultSslEngineFactory.PemStore.privateKey() for an encrypted PKCS#8 key
                String[] parts = args[i + 1].split("\\|", 2);
                String pem = new String(Files.readAllBytes(Paths.get(parts[0])));
                byte[] der = Base64.getDecoder().decode(pem.replaceAll("-----[^-]+-----", "").replaceAll("\\s", ""));
                EncryptedPrivateKeyInfo info = new EncryptedPrivateKeyInfo(der);
                SecretKey pbeKey = SecretKeyFactory.getInstance(info.getAlgName())
                    .generateSecret(new PBEKeySpec(parts[1].toCharArray()));
                Cipher cipher = Cipher.getInstance(info.getAlgName());
                cipher.init(Cipher.DECRYPT_MODE, pbeKey, info.getAlgParameters());
                out.println(KeyFactory.getInstance("RSA").generatePrivate(info.getKeySpec(cipher)).getAlgorithm());
            }
        }
    }
}
"""


@pytest.mark.skipif(shutil.which("java") is None, reason="needs a Java runtime")
def test_names_and_encrypted_keys_as_java_reads_them(pki, tmp_path):
    """Cross-check against the JDK: X500Principal.getName() and the PEM key decryption of Kafka's
    DefaultSslEngineFactory."""
    source = tmp_path / "KafkaCheck.java"
    source.write_text(_JAVA_CHECK)
    args = []
    for index, (name, _ignored) in enumerate(NAME_CASES):
        path = tmp_path / f"name{index}.der"
        path.write_bytes(name.public_bytes())
        args += ["name", str(path)]
    args += ["key", f"{pki['locked']['key']}|s3cret pw"]
    output = subprocess.run(["java", str(source)] + args, capture_output=True, timeout=300, check=True).stdout.decode(
        "utf-8"
    )
    assert output.split("\n")[:-1] == [expected for _ignored, expected in NAME_CASES] + ["RSA"]
