"""TLS files named in the connection options are checked before anything talks to Kafka: a missing file, a directory
and a file this process cannot read (the disk guard service reads them as a user of its own, and checks its
configuration as that user) are refused, naming the option, the path and why."""

import os

from ansible_collections.headroom.kafka.plugins.module_utils import connection


def problem(**options):
    return connection.connection_problem(dict({"security_protocol": "SSL"}, **options))


def test_a_readable_file_passes(tmp_path):
    path = tmp_path / "ca.pem"
    path.write_text("-----BEGIN CERTIFICATE-----\n")
    assert problem(ssl_cafile=str(path)) is None


def test_a_missing_file_or_a_directory_is_refused(tmp_path):
    missing = str(tmp_path / "missing.pem")
    assert problem(ssl_cafile=missing) == f"ssl_cafile must be a readable file (got {missing!r}: no such file)"
    assert problem(ssl_certfile=str(tmp_path), ssl_keyfile=str(tmp_path)) == (
        f"ssl_certfile must be a readable file (got {str(tmp_path)!r}: a directory)"
    )


def test_a_file_this_user_cannot_read_is_refused_naming_the_user(tmp_path, monkeypatch):
    path = tmp_path / "ca.pem"
    path.write_text("x")
    monkeypatch.setattr(connection.os, "access", lambda *_args: False)
    monkeypatch.setattr(connection, "_user", lambda: "user headroom-guard")
    assert problem(ssl_cafile=str(path)) == (
        f"ssl_cafile must be a readable file (got {str(path)!r}: not readable by user headroom-guard)"
    )


def test_a_closed_directory_on_the_way_is_named_as_such(tmp_path, monkeypatch):
    def closed(_path):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(connection.os, "stat", closed)
    monkeypatch.setattr(connection, "_user", lambda: "user headroom-guard")
    assert problem(ssl_cafile="/etc/kafka/admin-client/ca.pem") == (
        "ssl_cafile must be a readable file (got '/etc/kafka/admin-client/ca.pem': not readable by user "
        "headroom-guard: a directory on the way to it is closed to it)"
    )


def test_the_user_is_named_by_name_or_uid():
    assert connection._user() in (f"uid {os.geteuid()}",) or connection._user().startswith("user ")
