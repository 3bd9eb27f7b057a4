"""Security for the test broker: SASL/SCRAM, TLS contexts from Kafka's PEM configs, SSL principals, test PKI.

Everything here follows Apache Kafka's own implementation rather than the RFCs where the two differ:

* SCRAM (``ScramSaslServer``, ``ScramMessages``, ``ScramFormatter``): only the gs2 header ``n`` is accepted (no
  channel binding support, so ``y`` and ``p=`` are refused), user names and authzids are ASCII (``=2C``/``=3D``
  escaped), unknown extensions are ignored, ``tokenauth=true`` switches to delegation-token credentials, every
  failure but one reaches the client as the same "invalid credentials" message.
* TLS (``DefaultSslEngineFactory``): PEM key stores hold exactly one PKCS#8 private key, encrypted if and only if
  ``ssl.key.password`` is set; every certificate of a PEM trust store is a trust anchor; ``ssl.client.auth`` is
  ``required``, ``requested`` or ``none`` and is ignored on SASL_SSL listeners unless listener-prefixed.
* Principals (``DefaultKafkaPrincipalBuilder``): ``User:`` + the subject as ``X500Principal.getName()`` renders it,
  ``User:ANONYMOUS`` without a client certificate.
"""

import base64
import datetime
import hashlib
import hmac
import ipaddress
import logging
import os
import re
import secrets
import shutil
import ssl
import tempfile

from cryptography import x509
from cryptography.hazmat.primitives import hashes, padding, serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, rsa
from cryptography.hazmat.primitives.ciphers import Cipher, modes
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

try:
    from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
except ImportError:  # cryptography < 43
    from cryptography.hazmat.primitives.ciphers.algorithms import TripleDES

from kafka_testbed import errors

__all__ = [
    "MECHANISMS",
    "MIN_ITERATIONS",
    "MAX_ITERATIONS",
    "AuthenticationError",
    "IllegalSaslStateError",
    "scram_credential",
    "scram_credential_from_salted_password",
    "ScramServer",
    "make_ca",
    "make_certificate",
    "server_ssl_context",
    "principal_from_peer_cert",
    "ssl_principal",
    "x500_name_rfc2253",
]

LOG = logging.getLogger(__name__)

# --------------------------------------------------------------------------------------------------------------------
# SASL/SCRAM
# --------------------------------------------------------------------------------------------------------------------

MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
MIN_ITERATIONS = 4096  # ScramMechanism.minIterations(), both mechanisms
MAX_ITERATIONS = 16384  # ScramControlManager.MAX_ITERATIONS (AlterUserScramCredentials: "Too many iterations")
TOKEN_AUTH_EXTENSION = "tokenauth"  # ScramLoginModule.TOKEN_AUTH_CONFIG

_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}

# ScramMessages.AbstractScramMessage, translated from Java regex classes ([\x01-\x7F&&[^=,]] and friends).
_VALUE_SAFE_CHAR = r"[\x01-\x2b\x2d-\x3c\x3e-\x7f]"
_SASLNAME = rf"(?:{_VALUE_SAFE_CHAR}|=2C|=3D)+"
_VALUE = r"[\x01-\x2b\x2d-\x7f]+"
_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"
_B64 = "[a-zA-Z0-9/+]"
_BASE64 = rf"(?:{_B64}{{4}})*(?:{_B64}{{3}}=|{_B64}{{2}}==)?"
_RESERVED = rf"(?:m={_VALUE},)?"
_EXTENSIONS = rf"(?:,[A-Za-z]+={_VALUE})*"
_CLIENT_FIRST = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,{_RESERVED}n=(?P<saslname>{_SASLNAME}),r=(?P<nonce>{_PRINTABLE})(?P<extensions>{_EXTENSIONS})"
)
_CLIENT_FINAL = re.compile(rf"c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS},p=(?P<proof>{_BASE64})")


class AuthenticationError(Exception):
    """A failed SASL exchange.

    ``message`` is what Kafka puts in SaslAuthenticateResponse.ErrorMessage (with ``error_code``, 58 =
    SASL_AUTHENTICATION_FAILED); ``reason`` is the detail a broker keeps to its own log and never sends.
    """

    def __init__(self, message, reason=None, error_code=errors.SASL_AUTHENTICATION_FAILED):
        super().__init__(message)
        self.message = message
        self.reason = reason or message
        self.error_code = error_code


class IllegalSaslStateError(AuthenticationError):
    """A token arrived after the exchange completed or failed (Kafka's IllegalSaslStateException, error 34)."""

    def __init__(self, message):
        super().__init__(message, error_code=errors.ILLEGAL_SASL_STATE)


def _check_mechanism(mechanism):
    if mechanism not in _HASHES:
        raise ValueError(f"Unsupported SCRAM mechanism {mechanism!r}: supported mechanisms are {', '.join(MECHANISMS)}")
    return _HASHES[mechanism]


def _check_iterations(iterations, mechanism):
    if isinstance(iterations, bool) or not isinstance(iterations, int):
        raise ValueError(f"SCRAM iterations must be an integer, got {iterations!r}")
    if iterations < MIN_ITERATIONS:
        raise ValueError(
            f"SCRAM iterations {iterations} is below Kafka's minimum {MIN_ITERATIONS} for {mechanism} (Too few "
            "iterations)"
        )
    if iterations > MAX_ITERATIONS:
        raise ValueError(
            f"SCRAM iterations {iterations} is above Kafka's maximum {MAX_ITERATIONS} (Too many iterations)"
        )


def _random_string():
    """ScramFormatter.secureRandomString(): a 130-bit random number in base 36."""
    value = secrets.randbits(130)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        value, rem = divmod(value, 36)
        out = digits[rem] + out
        if not value:
            return out


def _server_nonce():
    return _random_string()


def _hmac(algorithm, key, data):
    return hmac.new(key, data, algorithm).digest()


def _b64(data):
    return base64.b64encode(data).decode("ascii")


def scram_credential_from_salted_password(salted_password, salt, iterations, mechanism):
    """The stored credential for a salted password, as the controller derives it from AlterUserScramCredentials."""
    algorithm = _check_mechanism(mechanism)
    _check_iterations(iterations, mechanism)
    client_key = _hmac(algorithm, salted_password, b"Client Key")
    return {
        "salt": _b64(salt),
        "iterations": iterations,
        "stored_key": _b64(hashlib.new(algorithm, client_key).digest()),
        "server_key": _b64(_hmac(algorithm, salted_password, b"Server Key")),
    }


def scram_credential(password, mechanism, iterations=MIN_ITERATIONS, salt=None):
    """A SCRAM credential for ``password``: JSON-safe dict of salt, iterations, stored_key, server_key (base64).

    Kafka normalises passwords by UTF-8 encoding only (no SASLprep). The default salt is what Kafka's
    ScramFormatter generates: the bytes of a random base-36 string.
    """
    algorithm = _check_mechanism(mechanism)
    _check_iterations(iterations, mechanism)
    if salt is None:
        salt = _random_string().encode("ascii")
    salted = hashlib.pbkdf2_hmac(algorithm, password.encode("utf-8"), bytes(salt), iterations)
    return scram_credential_from_salted_password(salted, bytes(salt), iterations, mechanism)


def _sasl_name_to_username(sasl_name):
    """ScramFormatter.username(): undo the =2C / =3D escaping, refusing any other '='."""
    username = sasl_name.replace("=2C", ",")
    if "=" in username.replace("=3D", ""):
        raise ValueError(f"Invalid username: {sasl_name}")
    return username.replace("=3D", "=")


def _parse_extensions(text):
    """ScramExtensions: ``,name=value`` pairs (Utils.parseMap); Kafka ignores all but ``tokenauth``."""
    extensions = dict(item.split("=", 1) for item in text.split(",") if item)
    if set(extensions) - {TOKEN_AUTH_EXTENSION}:
        LOG.debug("Unsupported SCRAM extensions will be ignored: %s", sorted(set(extensions) - {TOKEN_AUTH_EXTENSION}))
    return extensions


class ScramServer:  # pylint: disable=too-many-instance-attributes
    """The server side of one SCRAM-SHA-256/512 exchange, like Kafka's ScramSaslServer.

    ``lookup(username)`` returns the user's credential for this mechanism (a :func:`scram_credential` dict) or
    None. ``token_lookup(token_id)``, optional, serves clients that send the ``tokenauth=true`` extension: it returns
    the delegation token's credential dict with an extra ``owner`` key (the user the token belongs to) or None;
    without it token authentication fails like an unknown token does.

    Call :meth:`evaluate` with each client token (client-first, then client-final). It returns the server's reply
    or raises :class:`AuthenticationError`. After success ``complete`` is True and ``username`` is the authorization
    id (the token owner for token authentication).
    """

    def __init__(self, mechanism, lookup, *, token_lookup=None, reauthentication=False):
        self._algorithm = _check_mechanism(mechanism)
        self.mechanism = mechanism
        self._lookup = lookup
        self._token_lookup = token_lookup
        self._reauthentication = reauthentication
        self._state = "RECEIVE_CLIENT_FIRST_MESSAGE"
        self._exchange = {}
        self.complete = False
        self.username = None
        self.token_authenticated = False
        self.extensions = {}

    @property
    def state(self):
        """Kafka's state name: RECEIVE_CLIENT_FIRST_MESSAGE, RECEIVE_CLIENT_FINAL_MESSAGE, COMPLETE or FAILED."""
        return self._state

    def evaluate(self, token):
        """Process one client message and return the server's answer."""
        if self._state == "RECEIVE_CLIENT_FIRST_MESSAGE":
            handler = self._client_first
        elif self._state == "RECEIVE_CLIENT_FINAL_MESSAGE":
            handler = self._client_final
        else:
            raise IllegalSaslStateError(f"Unexpected challenge in Sasl server state {self._state}")
        try:
            return handler(bytes(token).decode("utf-8", errors="replace"))
        except AuthenticationError:
            self._state = "FAILED"
            self._exchange = {}
            raise

    def _failure(self, reason):
        """Kafka's answer to a SaslException: one message for every cause, the cause kept as ``reason``."""
        phase = "re-authentication" if self._reauthentication else "authentication"
        return AuthenticationError(
            f"Authentication failed during {phase} due to invalid credentials with SASL mechanism {self.mechanism}",
            reason,
        )

    def _client_first(self, message):
        match = _CLIENT_FIRST.fullmatch(message)
        if match is None:
            raise self._failure(f"Invalid SCRAM client first message format: {message}")
        extensions = _parse_extensions(match["extensions"])
        try:
            username = _sasl_name_to_username(match["saslname"])
        except ValueError as exc:
            raise self._failure(f"Authentication failed: Credentials could not be obtained ({exc})") from exc
        token_auth = extensions.get(TOKEN_AUTH_EXTENSION, "").lower() == "true"
        credential, authorization_id = self._find_credential(username, token_auth)
        if match["authzid"] and match["authzid"] != username:
            # Kafka's one SaslAuthenticationException: its message reaches the client as is.
            raise AuthenticationError(
                "Authentication failed: Client requested an authorization id that is different from username"
            )
        exchange = self._decode_credential(credential)
        exchange["authorization_id"] = authorization_id
        exchange["nonce"] = match["nonce"] + _server_nonce()
        # ScramMessages.ClientFirstMessage.clientFirstMessageBare(): rebuilt from the parsed fields.
        exchange["bare"] = ",".join(
            [f"n={match['saslname']}", f"r={match['nonce']}"]
            + [f"{name}={value}" for name, value in extensions.items()]
        )
        exchange["server_first"] = f"r={exchange['nonce']},s={_b64(exchange['salt'])},i={exchange['iterations']}"
        self._exchange = exchange
        self.extensions = extensions
        self.token_authenticated = token_auth
        self._state = "RECEIVE_CLIENT_FINAL_MESSAGE"
        return exchange["server_first"].encode("utf-8")

    def _find_credential(self, username, token_auth):
        try:
            if token_auth:
                found = self._token_lookup(username) if self._token_lookup is not None else None
                if found is None or not found.get("owner"):
                    raise self._failure(f"Token Authentication failed: Invalid tokenId : {username}")
                authorization_id = found["owner"]
            else:
                found = self._lookup(username)
                authorization_id = username
        except AuthenticationError:
            raise
        except Exception as exc:  # pylint: disable=broad-except  # Kafka: any Throwable of the callback handler
            raise self._failure(f"Authentication failed: Credentials could not be obtained ({exc!r})") from exc
        if found is None:
            raise self._failure("Authentication failed: Invalid user credentials")
        return found, authorization_id

    def _decode_credential(self, credential):
        try:
            salt = base64.b64decode(credential["salt"], validate=True)
            iterations = int(credential["iterations"])
            stored_key = base64.b64decode(credential["stored_key"], validate=True)
            server_key = base64.b64decode(credential["server_key"], validate=True)
        except (KeyError, TypeError, ValueError) as exc:
            raise self._failure(f"Authentication failed: Credentials could not be obtained ({exc!r})") from exc
        if iterations < MIN_ITERATIONS:
            raise self._failure(
                f"Iterations {iterations} is less than the minimum {MIN_ITERATIONS} for "
                f"{self.mechanism.replace('-', '_')}"
            )
        return {"salt": salt, "iterations": iterations, "stored_key": stored_key, "server_key": server_key}

    def _client_final(self, message):
        match = _CLIENT_FINAL.fullmatch(message)
        if match is None:
            raise self._failure(f"Invalid SCRAM client final message format: {message}")
        exchange = self._exchange
        if match["nonce"] != exchange["nonce"]:
            raise self._failure("Invalid client nonce in the final client message.")
        proof = base64.b64decode(match["proof"])
        # ScramFormatter.authMessage(): client-final-message-without-proof rebuilt without extensions.
        without_proof = f"c={_b64(base64.b64decode(match['channel']))},r={match['nonce']}"
        auth_message = f"{exchange['bare']},{exchange['server_first']},{without_proof}".encode("utf-8")
        client_signature = _hmac(self._algorithm, exchange["stored_key"], auth_message)
        if len(proof) != len(client_signature):
            raise self._failure("Invalid client credentials")
        client_key = bytes(a ^ b for a, b in zip(client_signature, proof, strict=True))
        if not hmac.compare_digest(hashlib.new(self._algorithm, client_key).digest(), exchange["stored_key"]):
            raise self._failure("Invalid client credentials")
        server_signature = _hmac(self._algorithm, exchange["server_key"], auth_message)
        self._exchange = {}
        self._state = "COMPLETE"
        self.complete = True
        self.username = exchange["authorization_id"]
        return f"v={_b64(server_signature)}".encode("ascii")


# --------------------------------------------------------------------------------------------------------------------
# DER and PEM helpers
# --------------------------------------------------------------------------------------------------------------------


def _der_read(data, pos):
    """Read the TLV at ``pos``: (tag, content start, end)."""
    if pos + 2 > len(data):
        raise ValueError("truncated DER")
    tag, length = data[pos], data[pos + 1]
    pos += 2
    if length & 0x80:
        count = length & 0x7F
        if not 0 < count <= 4 or pos + count > len(data):
            raise ValueError("bad DER length")
        length = int.from_bytes(data[pos : pos + count], "big")
        pos += count
    if pos + length > len(data):
        raise ValueError("truncated DER")
    return tag, pos, pos + length


def _der_children(data, start, end):
    """The TLVs inside [start, end): list of (tag, header start, content start, end)."""
    out = []
    pos = start
    while pos < end:
        tag, content, stop = _der_read(data, pos)
        out.append((tag, pos, content, stop))
        pos = stop
    return out


def _der(tag, content):
    length = len(content)
    if length < 0x80:
        return bytes([tag, length]) + content
    raw = length.to_bytes((length.bit_length() + 7) // 8, "big")
    return bytes([tag, 0x80 | len(raw)]) + raw + content


def _oid_string(content):
    arcs = []
    value = 0
    for byte in content:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            arcs.append(value)
            value = 0
    first = arcs[0]
    head = [min(first // 40, 2), first - 40 * min(first // 40, 2)]
    return ".".join(str(arc) for arc in head + arcs[1:])


def _pem_entries(text, name):
    """DefaultSslEngineFactory.PemParser: every ``name`` block of ``text``, whitespace-tolerant, as DER."""
    spaced = name.replace(" ", r"\s+")
    pattern = re.compile(
        rf"-+BEGIN\s*.*{spaced}[^-]*-+\s+(?:\s*[^\r\n]*:[^\r\n]*[\r\n]+)*([a-zA-Z0-9/+=\s]*)-+END\s*.*{spaced}[^-]*-+\s+",
        re.ASCII,
    )
    entries = [
        base64.b64decode(re.sub(r"\s", "", match.group(1)), validate=True) for match in pattern.finditer(text + "\n")
    ]
    if not entries:
        raise ValueError(f"No matching {name} entries in PEM")
    return entries


def _pem(label, der):
    body = base64.b64encode(der).decode("ascii")
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----\n"


def _pkcs8_kind(der):
    """'plain' for PrivateKeyInfo, 'encrypted' for EncryptedPrivateKeyInfo, None for anything else (PKCS#1, SEC1)."""
    try:
        tag, start, end = _der_read(der, 0)
        children = _der_children(der, start, end) if tag == 0x30 else []
    except ValueError:
        return None
    tags = [child[0] for child in children]
    if len(tags) >= 3 and tags[0] == 0x02 and tags[1] == 0x30 and tags[2] == 0x04:
        return "plain"
    if tags == [0x30, 0x04]:
        return "encrypted"
    return None


# PKCS#12 PBE (RFC 7292 appendix B) with SHA-1 and 3-key triple DES: the PKCS#8 encryption Kafka's own tests use and
# the one Java 17's EncryptedPrivateKeyInfo can decrypt (it has no SecretKeyFactory for PBES2/AES).
_PBE_SHA1_3DES_OID = bytes.fromhex("060a2a864886f70d010c0103")
_PBE_ITERATIONS = 2048


def _pkcs12_kdf(password, salt, iterations, purpose, size):
    block = 64
    diversifier = bytes([purpose]) * block
    secret = password.encode("utf-16-be") + b"\0\0"

    def stretch(data):
        if not data:
            return b""
        length = block * -(-len(data) // block)
        return (data * (length // len(data) + 1))[:length]

    state = bytearray(stretch(salt) + stretch(secret))
    out = b""
    while len(out) < size:
        digest = diversifier + bytes(state)
        for _ignored in range(iterations):
            digest = hashlib.sha1(digest).digest()
        out += digest
        addend = int.from_bytes(stretch(digest), "big") + 1
        for i in range(0, len(state), block):
            value = (int.from_bytes(state[i : i + block], "big") + addend) % (1 << (8 * block))
            state[i : i + block] = value.to_bytes(block, "big")
    return out[:size]


def _encrypt_pkcs8(key, password):
    """PEM ``ENCRYPTED PRIVATE KEY`` of ``key`` under pbeWithSHAAnd3-KeyTripleDES-CBC."""
    plain = key.private_bytes(
        serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    salt = os.urandom(16)
    des_key = _pkcs12_kdf(password, salt, _PBE_ITERATIONS, 1, 24)
    des_iv = _pkcs12_kdf(password, salt, _PBE_ITERATIONS, 2, 8)
    padder = padding.PKCS7(64).padder()
    encryptor = Cipher(TripleDES(des_key), modes.CBC(des_iv)).encryptor()
    encrypted = encryptor.update(padder.update(plain) + padder.finalize()) + encryptor.finalize()
    params = _der(
        0x30, _der(0x04, salt) + _der(0x02, _PBE_ITERATIONS.to_bytes((_PBE_ITERATIONS.bit_length() + 8) // 8, "big"))
    )
    return _pem("ENCRYPTED PRIVATE KEY", _der(0x30, _der(0x30, _PBE_SHA1_3DES_OID + params) + _der(0x04, encrypted)))


# --------------------------------------------------------------------------------------------------------------------
# Test PKI
# --------------------------------------------------------------------------------------------------------------------


def _write(path, data, mode):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.fchmod(fd, mode)
        os.write(fd, data if isinstance(data, bytes) else data.encode("ascii"))
    finally:
        os.close(fd)


def _new_key(key_type):
    if key_type == "ec":
        return ec.generate_private_key(ec.SECP256R1())
    if key_type == "rsa":
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    raise ValueError(f"key_type must be 'ec' or 'rsa', got {key_type!r}")


def _key_pem(key, password):
    if password is None:
        return key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode("ascii")
    if not password:
        raise ValueError("key_password must not be empty")
    return _encrypt_pkcs8(key, password)


def _validity(days):
    now = datetime.datetime.now(datetime.timezone.utc)
    return now - datetime.timedelta(days=1), now + datetime.timedelta(days=days)


def make_ca(directory, common_name="headroom-test-ca", *, name="ca", days=3650, key_type="ec"):
    """A self-signed CA: writes ``<name>.crt`` and ``<name>.key`` (PKCS#8, mode 0600); returns (cert_path, key_path)."""
    os.makedirs(directory, exist_ok=True)
    key = _new_key(key_type)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    not_before, not_after = _validity(days)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path = os.path.join(directory, f"{name}.crt")
    key_path = os.path.join(directory, f"{name}.key")
    _write(cert_path, cert.public_bytes(serialization.Encoding.PEM), 0o644)
    _write(key_path, _key_pem(key, None), 0o600)
    return cert_path, key_path


def make_certificate(  # pylint: disable=too-many-arguments,too-many-locals
    directory,
    name,
    ca_cert_path,
    ca_key_path,
    common_name,
    *,
    sans=("localhost", "127.0.0.1"),
    server=True,
    client=True,
    key_password=None,
    organization=None,
    days=825,
    key_type="ec",
    ca_key_password=None,
):
    """A certificate signed by the CA, for a broker (``server``) and/or a client (``client``).

    Writes ``<name>.crt`` (the certificate), ``<name>.key`` (PKCS#8 private key, encrypted when ``key_password`` is
    given, in the PBE-SHA1-3DES form Java's Kafka can read) and ``<name>.pem`` (that key, then the certificate and the
    CA certificate: the file ``ssl.keystore.location`` names with ``ssl.keystore.type=PEM``). Key files get mode 0600.
    The subject is ``CN=<common_name>`` (``CN=<common_name>,O=<organization>`` as Kafka prints it when given).
    ``sans`` entries that parse as IP addresses become IP SANs, the others DNS SANs.

    Returns {"cert", "key", "chain", "pem", "ca"}: ``chain`` and ``pem`` are both the ``<name>.pem`` path.
    """
    os.makedirs(directory, exist_ok=True)
    with open(ca_cert_path, "rb") as handle:
        ca_cert = x509.load_pem_x509_certificate(handle.read())
    with open(ca_key_path, "rb") as handle:
        ca_key = serialization.load_pem_private_key(
            handle.read(), ca_key_password.encode("utf-8") if ca_key_password else None
        )
    key = _new_key(key_type)
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization)] if organization else []
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    not_before, not_after = _validity(days)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(attributes))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=key_type == "rsa",
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
    )
    usages = ([ExtendedKeyUsageOID.SERVER_AUTH] if server else []) + (
        [ExtendedKeyUsageOID.CLIENT_AUTH] if client else []
    )
    if usages:
        builder = builder.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
    names = []
    for san in sans or ():
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(san)))
        except ValueError:
            names.append(x509.DNSName(san))
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    key_text = _key_pem(key, key_password)
    cert_text = cert.public_bytes(serialization.Encoding.PEM).decode("ascii")
    paths = {suffix: os.path.join(directory, f"{name}.{suffix}") for suffix in ("crt", "key", "pem")}
    _write(paths["crt"], cert_text, 0o644)
    _write(paths["key"], key_text, 0o600)
    _write(paths["pem"], key_text + cert_text + ca_cert.public_bytes(serialization.Encoding.PEM).decode("ascii"), 0o600)
    return {"cert": paths["crt"], "key": paths["key"], "chain": paths["pem"], "pem": paths["pem"], "ca": ca_cert_path}


# --------------------------------------------------------------------------------------------------------------------
# Broker TLS context
# --------------------------------------------------------------------------------------------------------------------

_CLIENT_AUTH = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL, "none": ssl.CERT_NONE}
_PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
# Known to Java but disabled by Java 17's jdk.tls.disabledAlgorithms: listed protocols Kafka never negotiates.
_DISABLED_PROTOCOLS = {"TLSv1.1", "TLSv1", "SSLv3", "SSLv2Hello"}


def _effective_config(props, listener):
    """``listener.name.<listener>.<key>`` overrides ``<key>``, as Kafka's valuesWithPrefixOverride()."""
    config = dict(props)
    if listener:
        prefix = f"listener.name.{listener.lower()}."
        config.update({key[len(prefix) :]: value for key, value in props.items() if key.startswith(prefix)})
    return config


def _only_pem(config, key):
    """Kafka's default store type is JKS; this broker reads PEM stores only."""
    value = config.get(key)
    if value != "PEM":
        shown = "JKS (Kafka's default)" if value is None else value
        raise ValueError(f"{key}={shown} is not supported: only PEM is supported by this test broker")


def _read_text(path, what):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as exc:
        raise ValueError(f"Failed to load PEM SSL {what} {path}: {exc}") from exc


def _load_private_key(text, password, where):
    keys = _pem_entries(text, "PRIVATE KEY")
    if len(keys) != 1:
        raise ValueError(f"{where}: Expected one private key, but found {len(keys)}")
    der = keys[0]
    kind = _pkcs8_kind(der)
    if kind is None:
        raise ValueError(
            f"{where}: the private key is not PKCS#8; Kafka's PEM key store reads only 'BEGIN PRIVATE KEY' or "
            "'BEGIN ENCRYPTED PRIVATE KEY' blocks (convert with: openssl pkcs8 -topk8)"
        )
    if kind == "encrypted" and password is None:
        raise ValueError(f"{where}: the private key is encrypted, so ssl.key.password is required")
    if kind == "plain" and password is not None:
        raise ValueError(
            f"{where}: ssl.key.password is set but the private key is not encrypted; Kafka then fails to load the key"
        )
    try:
        key = serialization.load_der_private_key(der, password.encode("utf-8") if password is not None else None)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{where}: the private key could not be loaded (wrong ssl.key.password?): {exc}") from exc
    except Exception as exc:  # pylint: disable=broad-except  # unsupported encryption schemes
        raise ValueError(f"{where}: the private key could not be loaded: {exc}") from exc
    if not isinstance(key, (rsa.RSAPrivateKey, dsa.DSAPrivateKey, ec.EllipticCurvePrivateKey)):
        raise ValueError(
            f"{where}: Private key could not be loaded: Kafka's PEM key store accepts RSA, DSA and EC keys only"
        )
    return key


def _load_certificates(text, where):
    try:
        return [x509.load_der_x509_certificate(der) for der in _pem_entries(text, "CERTIFICATE")]
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from exc


def _spki(public_key):
    return public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def _load_keystore(context, key_text, chain_text, password, where):
    key = _load_private_key(key_text, password, where)
    certs = _load_certificates(chain_text, where)
    if _spki(certs[0].public_key()) != _spki(key.public_key()):
        raise ValueError(f"{where}: the private key does not belong to the first certificate of the chain")
    ephemeral = secrets.token_urlsafe(24)
    data = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(ephemeral.encode("ascii")),
    )
    data += b"".join(cert.public_bytes(serialization.Encoding.PEM) for cert in certs)
    directory = tempfile.mkdtemp(prefix="kafka-sim-tls-")
    try:
        path = os.path.join(directory, "keystore.pem")
        _write(path, data, 0o600)
        context.load_cert_chain(path, password=ephemeral)
    except ssl.SSLError as exc:
        raise ValueError(f"{where}: {exc}") from exc
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _client_auth(config, props, listener, security_protocol):
    value = config.get("ssl.client.auth", "none")
    if value not in _CLIENT_AUTH:
        raise ValueError(
            f"Invalid value {value} for configuration ssl.client.auth: String must be one of: required, requested, none"
        )
    if security_protocol == "SASL_SSL":
        # ChannelBuilders: on SASL_SSL listeners only the listener-prefixed ssl.client.auth counts.
        prefixed = f"listener.name.{listener.lower()}.ssl.client.auth" if listener else None
        if prefixed not in props:
            if value != "none":
                LOG.warning(
                    "Broker configuration 'ssl.client.auth' is applied only to SSL listeners; "
                    "use the listener-prefixed configuration for SASL_SSL listeners"
                )
            return ssl.CERT_NONE
    return _CLIENT_AUTH[value]


def _protocol_range(config):
    names = [item.strip() for item in config.get("ssl.enabled.protocols", "").split(",") if item.strip()]
    names = names or ["TLSv1.2", "TLSv1.3"]
    unknown = [name for name in names if name not in _PROTOCOLS and name not in _DISABLED_PROTOCOLS]
    if unknown:
        raise ValueError(f"ssl.enabled.protocols: unsupported protocol(s) {', '.join(unknown)}")
    usable = sorted(_PROTOCOLS[name] for name in names if name in _PROTOCOLS)
    if not usable:
        raise ValueError(
            f"ssl.enabled.protocols={','.join(names)} leaves no protocol enabled (TLSv1.2 and TLSv1.3 are the usable "
            "ones)"
        )
    return usable[0], usable[-1]


def _keystore_source(config):
    """Validate the key store configs like DefaultSslEngineFactory.createKeystore(): (key text, chain text, where)."""
    _only_pem(config, "ssl.keystore.type")
    location = config.get("ssl.keystore.location")
    inline_key = config.get("ssl.keystore.key")
    inline_chain = config.get("ssl.keystore.certificate.chain")
    if inline_key is not None:
        if inline_chain is None:
            raise ValueError(
                "SSL private key is specified, but certificate chain is not specified (ssl.keystore.certificate.chain)."
            )
        if location is not None:
            raise ValueError(
                "Both SSL key store location and separate private key are specified (ssl.keystore.location, "
                "ssl.keystore.key)."
            )
    elif inline_chain is not None:
        raise ValueError("SSL certificate chain is specified, but private key is not specified (ssl.keystore.key)")
    elif location is None:
        raise ValueError(
            "An SSL listener needs a key store: set ssl.keystore.location, or ssl.keystore.key and "
            "ssl.keystore.certificate.chain"
        )
    if "ssl.keystore.password" in config:
        raise ValueError(
            "SSL key store password cannot be specified with PEM format, only key password may be specified "
            "(remove ssl.keystore.password)."
        )
    if inline_key is not None:
        return inline_key, inline_chain, "ssl.keystore.key/ssl.keystore.certificate.chain"
    text = _read_text(location, "keystore")
    return text, text, f"ssl.keystore.location {location}"


def _truststore_source(config):
    """Validate the trust store configs like DefaultSslEngineFactory.createTruststore(): (PEM text, where) or None."""
    location = config.get("ssl.truststore.location")
    inline = config.get("ssl.truststore.certificates")
    if location is None and inline is None:
        return None
    _only_pem(config, "ssl.truststore.type")
    if location is not None and inline is not None:
        raise ValueError(
            "Both SSL trust store location and separate trust certificates are specified "
            "(ssl.truststore.location, ssl.truststore.certificates)."
        )
    if "ssl.truststore.password" in config:
        raise ValueError(
            "SSL trust store password cannot be specified for PEM format (remove ssl.truststore.password)."
        )
    if inline is not None:
        return inline, "ssl.truststore.certificates"
    return _read_text(location, "truststore"), f"ssl.truststore.location {location}"


def server_ssl_context(props, *, listener=None, security_protocol="SSL"):
    """An ``ssl.SSLContext`` for a broker listener from Kafka's ``ssl.*`` broker configs (PEM stores only).

    Key store: ``ssl.keystore.location`` (a PEM file with one PKCS#8 key and the certificate chain) or the inline
    ``ssl.keystore.key`` + ``ssl.keystore.certificate.chain``, with ``ssl.keystore.type=PEM`` and, for an encrypted
    key, ``ssl.key.password``. Trust store (optional; without it the system's CAs are trusted, as Java's cacerts
    would be): ``ssl.truststore.location`` or inline ``ssl.truststore.certificates`` with ``ssl.truststore.type=PEM``.
    ``ssl.client.auth`` (required | requested | none, default none) sets the verify mode; on a SASL_SSL listener it
    counts only when listener-prefixed. ``ssl.enabled.protocols`` limits the TLS versions (TLSv1.2, TLSv1.3).
    ``ssl.cipher.suites`` (Java suite names) is not applied.

    With ``listener`` given, ``listener.name.<listener>.<key>`` values override ``<key>``.
    Raises ValueError for configurations Kafka rejects or this broker does not support.
    """
    config = _effective_config(props, listener)
    verify_mode = _client_auth(config, props, listener, security_protocol)
    minimum, maximum = _protocol_range(config)
    key_text, chain_text, where = _keystore_source(config)
    trust = _truststore_source(config)

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = minimum
    context.maximum_version = maximum
    _load_keystore(context, key_text, chain_text, config.get("ssl.key.password"), where)
    context.verify_mode = verify_mode
    if trust is not None:
        certs = _load_certificates(*trust)
        context.load_verify_locations(cadata=b"".join(cert.public_bytes(serialization.Encoding.DER) for cert in certs))
        # Java trusts every certificate of the trust store as an anchor, intermediate or not.
        context.verify_flags |= ssl.VerifyFlags.VERIFY_X509_PARTIAL_CHAIN
    elif verify_mode != ssl.CERT_NONE:
        context.load_default_certs(ssl.Purpose.CLIENT_AUTH)
    return context


# --------------------------------------------------------------------------------------------------------------------
# SSL principals
# --------------------------------------------------------------------------------------------------------------------

# AVAKeyword entries with an RFC 2253 keyword; every other attribute type is printed as its OID.
_RFC2253_KEYWORDS = {
    "2.5.4.3": "CN",
    "2.5.4.6": "C",
    "2.5.4.7": "L",
    "2.5.4.8": "ST",
    "2.5.4.10": "O",
    "2.5.4.11": "OU",
    "2.5.4.9": "STREET",
    "0.9.2342.19200300.100.1.25": "DC",
    "0.9.2342.19200300.100.1.1": "UID",
}
# AVA.isDerString(value, false): UTF8String, PrintableString, T61String, IA5String, GeneralString, BMPString. Java 17's
# AVA decodes all of them as UTF-8 (so a BMPString comes out with \00 escapes); other value types are printed as #hex.
_STRING_TAGS = frozenset((0x0C, 0x13, 0x14, 0x16, 0x1B, 0x1E))
_ESCAPEES = ',=+<>#;"\\'


def _ava_rfc2253(name_der, ava):
    _ignored, _ignored, start, end = ava
    children = _der_children(name_der, start, end)
    if len(children) != 2 or children[0][0] != 0x06:
        raise ValueError("malformed AttributeTypeAndValue")
    oid = _oid_string(name_der[children[0][2] : children[0][3]])
    keyword = _RFC2253_KEYWORDS.get(oid, oid)
    value_tag, value_header, value_start, value_end = children[1]
    if keyword[0].isdigit() or value_tag not in _STRING_TAGS:
        return f"{keyword}=#{name_der[value_header:value_end].hex()}"
    text = name_der[value_start:value_end].decode("utf-8", errors="replace")
    return f"{keyword}={_escape_rfc2253(text)}"


def _escape_rfc2253(text):
    """AVA.toRFC2253String(): backslash before ,=+<>#;"\\ and around leading/trailing spaces, NUL as \\00."""
    flat = "".join("\\" + char if char in _ESCAPEES else "\\00" if char == "\0" else char for char in text)
    lead = len(flat) - len(flat.lstrip(" \r"))
    trail = len(flat.rstrip(" \r"))
    return "".join(("\\" + char) if (i < lead or i >= trail) else char for i, char in enumerate(flat))


def x500_name_rfc2253(name_der):
    """A DER X.500 Name as Java's ``X500Principal.getName()`` (RFC 2253 format) renders it."""
    name_der = bytes(name_der)
    tag, start, end = _der_read(name_der, 0)
    if tag != 0x30:
        raise ValueError("an X.500 Name is a DER SEQUENCE")
    rdns = []
    for rdn in _der_children(name_der, start, end):
        avas = _der_children(name_der, rdn[2], rdn[3])
        rdns.append("+".join(_ava_rfc2253(name_der, ava) for ava in avas))
    return ",".join(reversed(rdns))


def principal_from_peer_cert(der):
    """Kafka's principal for an SSL connection: ``User:`` + the client certificate's subject, or ``User:ANONYMOUS``.

    ``der`` is the client certificate (``SSLSocket.getpeercert(binary_form=True)``), None when it sent none.
    This is DefaultKafkaPrincipalBuilder with ``ssl.principal.mapping.rules=DEFAULT``.
    """
    if not der:
        return "User:ANONYMOUS"
    cert = x509.load_der_x509_certificate(bytes(der))
    return "User:" + x500_name_rfc2253(cert.subject.public_bytes())


def ssl_principal(ssl_socket):
    """:func:`principal_from_peer_cert` for an ``ssl.SSLSocket`` or ``ssl.SSLObject`` after its handshake."""
    return principal_from_peer_cert(ssl_socket.getpeercert(binary_form=True))
