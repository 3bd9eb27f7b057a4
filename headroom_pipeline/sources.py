"""Where input rows come from: files (one, a directory or a glob; JSON lines or Parquet) or the snapshot topic."""

import glob
import math
import os
import urllib.parse

from headroom_pipeline.config import ConfigError

KAFKA_SCHEME = "kafka://"
PARQUET_SUFFIXES = (".parquet", ".parq")
# Query parameters of a kafka:// URL: the collection's connection options (secrets come from the environment).
KAFKA_OPTIONS = ("security_protocol", "ssl_cafile", "ssl_certfile", "ssl_keyfile", "ssl_check_hostname", "sasl_mechanism",
                 "sasl_username", "request_timeout")
SECRET_ENVIRONMENT = {"sasl_password": "HEADROOM_KAFKA_SASL_PASSWORD", "ssl_password": "HEADROOM_KAFKA_SSL_PASSWORD"}


class SourceUnavailable(RuntimeError):
    """A well-formed source that cannot be read now (cluster unreachable, access denied): a failure, not bad input."""


def is_kafka(location):
    return isinstance(location, str) and location.startswith(KAFKA_SCHEME)


def resolve_files(location, option):
    """(format, [files]) for a file, a directory (its files, recursively, skipping hidden ones) or a glob.

    The format is parquet when every file ends in .parquet (Spark's own part files do), else json (JSON lines).
    """
    if os.path.isdir(location):
        files = sorted(os.path.join(root, name) for root, dirs, names in os.walk(location) for name in names
                       if not name.startswith((".", "_")))
    elif os.path.isfile(location):
        files = [location]
    else:
        files = sorted(path for path in glob.glob(location, recursive=True) if os.path.isfile(path))
    if not files:
        raise ConfigError(f"{option}: no file matches {location!r} (give a file, a directory or a glob of JSON lines or Parquet files)")
    parquet = [path for path in files if path.endswith(PARQUET_SUFFIXES)]
    if parquet and len(parquet) != len(files):
        raise ConfigError(f"{option}: {location!r} mixes Parquet and other files; give one format per option")
    return ("parquet" if parquet else "json"), files


def parse_kafka_url(url, option="--snapshots"):
    """(connection options, topic) from kafka://host:port[,host:port]/topic[?security_protocol=SSL&ssl_cafile=...]."""
    parsed = urllib.parse.urlsplit(url)
    topic = parsed.path.lstrip("/")
    if "@" in parsed.netloc:
        # Never echoed: the text before @ would be a user and password, and would end up in errors and the summary.
        raise ConfigError(f"{option}: a kafka:// URL takes no credentials before the host; give sasl_username as a parameter "
                          f"and the password in {SECRET_ENVIRONMENT['sasl_password']}")
    if not parsed.netloc or not topic or "/" in topic:
        raise ConfigError(f"{option}: {url!r} must look like kafka://host:port[,host:port]/topic")
    options = {"bootstrap_servers": [s for s in parsed.netloc.split(",") if s]}
    for key, values in urllib.parse.parse_qs(parsed.query, keep_blank_values=True).items():
        if key not in KAFKA_OPTIONS:
            raise ConfigError(f"{option}: unknown parameter {key!r} in the kafka:// URL; allowed: {', '.join(KAFKA_OPTIONS)} "
                              f"(passwords come from {' and '.join(SECRET_ENVIRONMENT.values())})")
        options[key] = values[-1]
    for key in ("ssl_cafile", "ssl_certfile", "ssl_keyfile"):
        if key in options:
            options[key] = os.path.expanduser(options[key])
            if not os.path.isfile(options[key]):
                raise ConfigError(f"{option}: {key} in the kafka:// URL is not a file here (got {options[key]!r})")
    if "ssl_check_hostname" in options:
        options["ssl_check_hostname"] = options["ssl_check_hostname"].lower() not in ("0", "false", "no")
    if "request_timeout" in options:
        options["request_timeout"] = _positive_seconds(options["request_timeout"], option)
    for key, variable in SECRET_ENVIRONMENT.items():
        if os.environ.get(variable):
            options[key] = os.environ[variable]
    return options, topic


def read_kafka_records(url, option="--snapshots"):
    """Every record of the snapshot topic up to the end offsets seen at start: [(where, key text, value text or None)].

    Read on the driver through the collection's Kafka adapter (the one place that talks to Kafka).
    """
    from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapter, KafkaAdapterError

    options, topic = parse_kafka_url(url, option)
    adapter = KafkaAdapter(**options)
    try:
        records = adapter.read_all(topic)
    except KafkaAdapterError as exc:
        raise SourceUnavailable(f"{option}: cannot read topic {topic!r}: {exc}") from None
    finally:
        adapter.close()
    result = []
    for index, (key, value, _timestamp) in enumerate(records):
        where = f"{KAFKA_SCHEME}{','.join(options['bootstrap_servers'])}/{topic}#{index}"
        result.append((where, _text(key), _text(value)))
    return result


def _positive_seconds(text, option):
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{option}: request_timeout in the kafka:// URL must be a number of seconds greater than 0 (got {text!r})")
    return value


def _text(data):
    if data is None:
        return None
    if isinstance(data, bytes):
        return data.decode("utf-8", errors="replace")
    return str(data)
