"""Where input rows come from: files (one, a directory or a glob; JSON lines or Parquet) or the snapshot topic.

Files are handed to Spark as absolute ``file:`` URIs that name exactly one file each: Hadoop would read a ':' in
a relative path as a scheme, expand ``{}[]*?`` and ``\\`` as a glob, and Spark skips a file whose name starts with
``.`` or ``_`` without a word. A file Hadoop cannot name even so is read through a symbolic link with a plain name.

A disk guard's history directory (``--history-dir``: snapshots-* and decisions-* files of one UTC hour each, plain
while the hour runs, .jsonl.gz after) is read as it is while the guard writes it: each option takes its own kind of
files, and the plain ones, which grow and are replaced, are read once on the driver (resolve_input).
"""

import atexit
import glob
import gzip
import hashlib
import math
import os
import re
import shutil
import tempfile
import urllib.parse
from collections.abc import Mapping
from typing import Any, NamedTuple, TypeVar, overload

from ansible_collections.headroom.kafka.plugins.module_utils import guard_history, pipeline_command, secret_masking
from ansible_collections.headroom.kafka.plugins.module_utils.option_checks import topic_name_problem
from headroom_pipeline.config import ConfigError

KAFKA_SCHEME = "kafka://"
PARQUET_SUFFIXES = (".parquet", ".parq")
# Compressed text Spark's reader (Hadoop's codecs) decompresses by the file name's suffix, which a link must keep.
COMPRESSED_SUFFIXES = (".gz", ".bz2")
# Lines as Hadoop's text reader ends them (a JSON-lines file read on the driver is split the same way).
LINE_END = re.compile(r"\r\n|\r|\n")
# Query parameters of a kafka:// URL: the collection's connection options, as the filter kafka_topic_url writes them
# (the passwords come from the environment).
KAFKA_OPTIONS = pipeline_command.URL_OPTIONS
SECRET_ENVIRONMENT = pipeline_command.SECRET_ENVIRONMENT
# In a location, name=value after ?, &, ;, #, / or at the start; the value runs to the next "&name=" (a password
# may hold a bare &) or the end.
_PARAMETER = re.compile(r"(?P<lead>^|[?&;#/])(?P<name>[^=?&;#/]*)=(?P<value>.*?)(?=[&;][^&;=#?/]*=|$)", re.DOTALL)
# In a message, the same after a quote, a space or a bracket too, and the value ends where the quoted text does.
_LOOSE_PARAMETER = re.compile(r"(?P<lead>^|[?&;#/'\"\s(\[,])(?P<name>[^=?&;#/'\"\s]*)=(?P<value>[^&;'\"\s]*)")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:/*")
# A URL quoted in a message (file: URIs, which have no user information, aside).
_URL_IN_MESSAGE = re.compile(r"(?<![A-Za-z0-9+.-])(?!file:)[A-Za-z][A-Za-z0-9+.-]*:/[^\s'\"]*")
_HARMLESS_VALUE = re.compile(r"[?&;](?:%s)=[^&;]*" % "|".join(KAFKA_OPTIONS))
# Characters Hadoop expands in a path (Globber), escaped with a backslash to mean themselves.
GLOB_CHARACTERS = "{}[]*?\\"
# Spark's reader, given the local file system without its checksum layer: that layer builds the name of each file's
# ".<name>.crc" as a relative URI, which fails on a ':' in the name. Only Hadoop writes those checksum files, and an
# input's are then left unverified, as a file copied by any other tool has none.
LOCAL_READ_OPTIONS = {"fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem", "fs.file.impl.disable.cache": "true"}
PARQUET_MAGIC = b"PAR1"
_LINKS: dict[str, str | int] = {}  # the directory of the links to inputs, and how many it holds
# A record of the snapshot topic: (where: kafka://servers/topic#index, key text, value text or None).
KafkaRecord = tuple[str, str | None, str | None]
Unmasked = TypeVar("Unmasked")


class SourceUnavailable(RuntimeError):
    """A well-formed source that cannot be read now (cluster unreachable, access denied): a failure, not bad input."""


def is_kafka(location: object) -> bool:
    return isinstance(location, str) and location[: len(KAFKA_SCHEME)].lower() == KAFKA_SCHEME


@overload
def mask_location(location: str) -> str:
    """A location: masked."""


@overload
def mask_location(location: Unmasked) -> Unmasked:
    """Anything else (None, a number): as it is."""


def mask_location(location: object) -> object:
    """``location`` (one kafka:// URL or path, all of it) with every secret it may carry replaced by the collection's
    mask (secret_masking.MASK): the user information before an @ (kafka://user:password@host), the values of
    parameters named like a password, secret or token (secret_masking.is_secret_name: sasl_password, ssl_password,
    ...), and the passwords the job was given in its environment.

    Errors, progress lines, summary.json and the report quote locations through this function.
    """
    if not isinstance(location, str):
        return location
    return _without_environment_secrets(_PARAMETER.sub(_masked_parameter, _masked_user_information(location)))


def mask_secrets(message: str) -> str:
    """A message with the secrets of any URL or name=value in it masked as mask_location does: the last line of
    defence for every line the command prints, since a location's fragments (a topic) may be quoted on their own."""
    if not isinstance(message, str):
        return message
    message = _URL_IN_MESSAGE.sub(lambda match: mask_location(match[0]), message)
    return _without_environment_secrets(_LOOSE_PARAMETER.sub(_masked_parameter, message))


def _without_environment_secrets(text):
    return secret_masking.without_secrets(text, [os.environ.get(variable) for variable in SECRET_ENVIRONMENT.values()])


def _masked_parameter(match):
    if not secret_masking.is_secret_name(urllib.parse.unquote_plus(match["name"])):
        return match[0]
    return f"{match['lead']}{match['name']}={secret_masking.MASK}"


def _masked_user_information(text):
    """Everything from the scheme through the last @ that is not inside a known harmless parameter (an @ in
    sasl_username=alice@example.com is not the end of user information)."""
    scheme = _SCHEME.match(text)
    if not scheme:
        return text
    start = scheme.end()
    harmless = [match.span() for match in _HARMLESS_VALUE.finditer(text, start)]
    ends = [
        index
        for index, character in enumerate(text)
        if index >= start and character == "@" and not any(begin <= index < end for begin, end in harmless)
    ]
    return text[:start] + secret_masking.MASK + text[ends[-1] :] if ends else text


class ResolvedInput(NamedTuple):
    """What an input's files are and how they are read."""

    format: str  # parquet or json (JSON lines)
    files: list[str]  # read by Spark
    held: list[tuple[str, str]]  # (file as shown, line): lines read here once (see resolve_input)


def resolve_files(location: str, option: str, history_kind: str | None = None) -> tuple[str, list[str]]:
    """(format, [files]) for a file, a directory (its files, recursively, skipping hidden ones) or a glob.

    The format is parquet when every file ends in .parquet (Spark's own part files do), else json (JSON lines).
    ``history_kind``: the kind of the disk guard's history files (snapshots, decisions) the option reads. A directory
    that holds guard history files is the guard's history directory, of which only the files of that kind are read;
    a glob leaves out the history files of the other kind; a file named on its own is read as it is.
    """
    if os.path.isdir(location):
        files = sorted(
            os.path.join(root, name)
            for root, dirs, names in os.walk(location)
            for name in names
            if not name.startswith((".", "_"))
        )
        if history_kind is not None and any(_history_kind(path) for path in files):
            files = [path for path in files if _history_kind(path) == history_kind]
            if not files:
                raise ConfigError(
                    f"{option}: the guard history directory {mask_location(location)!r} holds no "
                    f"{history_kind}-*.jsonl[.gz] file"
                )
    elif os.path.isfile(location):
        files = [location]
    else:
        files = sorted(path for path in glob.glob(location, recursive=True) if os.path.isfile(path))
        if history_kind is not None:
            files = [path for path in files if _history_kind(path) in (None, history_kind)]
    if not files:
        raise ConfigError(
            f"{option}: no file matches {mask_location(location)!r} "
            "(give a file, a directory or a glob of JSON lines or Parquet files)"
        )
    parquet = [path for path in files if path.endswith(PARQUET_SUFFIXES)]
    if parquet and len(parquet) != len(files):
        raise ConfigError(
            f"{option}: {mask_location(location)!r} mixes Parquet and other files; give one format per option"
        )
    for path in parquet:
        _check_parquet_file(path, option)
    return ("parquet" if parquet else "json"), files


class Tail(NamedTuple):
    """What an incremental run reads of a file: its content after ``offset`` bytes (uncompressed), which an earlier
    run read and whose sha256 is ``digest``; offset 0 (digest None) reads it whole."""

    offset: int
    digest: str | None = None


WHOLE = Tail(0)


class PrefixChanged(Exception):
    """A file an incremental run reads the rest of no longer begins with what the earlier run read (or that read
    ended inside a line): the records read before are not known to be the file's first ones."""


def resolve_input(
    location: str,
    option: str,
    history_kind: str | None = None,
    only: Mapping[str, Tail] | None = None,
    consumed: dict[str, tuple[int, str]] | None = None,
) -> ResolvedInput:
    """The files of ``location`` as resolve_files finds them, the disk guard's uncompressed history files read here,
    once, and held as they are now.

    The guard appends to the current hour's file while the job runs, and replaces a finished hour's file by its
    .jsonl.gz; Spark reads an input more than once (its records, then its rejected ones), and would find such a file
    grown or gone in between. Held, every read sees the same records, a last line without its newline included (a
    guard killed in the middle of writing it: one rejected record). A file compressed since it was listed is read
    from its .jsonl.gz; a file listed beside the .jsonl.gz that holds it already (the guard was replacing it) is not
    read twice.

    ``only``: {absolute path: Tail} of an incremental run, which reads just those files, and of each only the Tail's
    part (PrefixChanged when the file no longer begins with what was read before). ``consumed``: filled with
    {absolute path of an uncompressed history file: (bytes, sha256)} of each one held, as read (from its .jsonl.gz when
    compressed meanwhile): where the next incremental run resumes reading it.
    """
    kind, files = resolve_files(location, option, history_kind)
    planned = _planned(files, only) if only is not None else {}
    if only is not None:
        files = list(planned)
    consumed = {} if consumed is None else consumed
    listed = set(files)
    spark_files: list[str] = []
    held: list[tuple[str, str]] = []
    for path in files:
        if path in planned and (planned[path].offset or path.endswith(".gz") and _is_growing(path[: -len(".gz")])):
            held.extend(_held_rest(path, planned[path], consumed))
            continue
        if not _is_growing(path):
            spark_files.append(path)
            continue
        compressed = path + ".gz"
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            if compressed not in listed and os.path.isfile(compressed):
                # Held too (an hour's file is small), so that the next incremental run knows what was read of it.
                held.extend(_held_rest(compressed, WHOLE, consumed))
                listed.add(compressed)
            continue
        if compressed in listed and _ends_with(compressed, data):
            continue
        _record_read(consumed, path, data)
        held.extend(_held_lines(path, data))
    return ResolvedInput(kind, spark_files, held)


def _planned(files, only):
    """{file: Tail} of ``files`` that ``only`` names, an uncompressed history file's Tail carried to its .jsonl.gz
    when that is listed too (compressed since the run was planned): the .gz holds the whole hour, and is read alone."""
    planned: dict[str, Tail] = {}
    logical_of: dict[str, str] = {}
    for path in files:  # sorted: a file comes before its .gz
        key = os.path.abspath(path)
        plain = key[: -len(".gz")] if key.endswith(".gz") and _is_growing(key[: -len(".gz")]) else key
        tail = only.get(key, only.get(plain))
        if tail is None:
            continue
        if plain in logical_of:
            del planned[logical_of[plain]]
        planned[path] = tail
        logical_of[plain] = path
    return planned


def _held_rest(path, tail, consumed):
    """The lines of ``path`` after ``tail.offset`` (its .jsonl.gz when an uncompressed history file is gone), its
    beginning checked against ``tail.digest``; records what was read in ``consumed`` under the uncompressed name."""
    plain = path[: -len(".gz")] if path.endswith(".gz") else path
    try:
        source, data = path, _content(path)
    except FileNotFoundError:
        if path.endswith(".gz"):
            raise
        source, data = plain + ".gz", _content(plain + ".gz")
    if tail.offset:
        prefix = data[: tail.offset]
        if len(prefix) != tail.offset or hashlib.sha256(prefix).hexdigest() != tail.digest:
            raise PrefixChanged(f"{shown_path(os.path.abspath(source))} does not begin with what the last run read")
        if prefix[-1:] not in (b"\n", b"\r"):
            raise PrefixChanged(f"the last run read {shown_path(os.path.abspath(source))} up to the middle of a line")
    if _is_growing(plain):
        _record_read(consumed, plain, data)
    return _held_lines(source, data[tail.offset :])


def _record_read(consumed, plain, data):
    """What was read of an uncompressed history file, by its name: where the next incremental run resumes it."""
    consumed[os.path.abspath(plain)] = (len(data), hashlib.sha256(data).hexdigest())


def _content(path):
    """A file's bytes, uncompressed when it is a .gz."""
    if path.endswith(".gz"):
        with gzip.open(path, "rb") as handle:
            return handle.read()
    with open(path, "rb") as handle:
        return handle.read()


def _held_lines(path, data):
    lines = LINE_END.split(data.decode("utf-8", "replace"))
    if lines and not lines[-1]:
        lines.pop()  # the end of the last line, not a line
    source = shown_path(os.path.abspath(path))
    return [(source, line) for line in lines]


def has_history_files(location: str, kind: str) -> bool:
    """Whether ``location`` is a directory that holds disk guard history files of ``kind`` (snapshots, decisions)."""
    return os.path.isdir(location) and any(
        _history_kind(name) == kind
        for unused_root, unused_dirs, names in os.walk(location)
        for name in names
        if not name.startswith((".", "_"))
    )


def _history_kind(path):
    """snapshots or decisions for a disk guard history file, None for any other file."""
    parsed = guard_history.parse_name(os.path.basename(path))
    return parsed[0] if parsed else None


def _is_growing(path):
    """An uncompressed guard history file: its hour may still be appended to, and it is replaced once compressed."""
    parsed = guard_history.parse_name(os.path.basename(path))
    return parsed is not None and not parsed[2]


def _ends_with(compressed, data):
    """Whether the gzip file ``compressed`` ends with ``data`` (it was made of the plain file, which is now gone)."""
    try:
        return _content(compressed).endswith(data)
    except (OSError, EOFError):
        return False


def _check_parquet_file(path, option):
    """A .parquet file that is not one (empty, truncated) fails here, named, rather than in Spark's footer reader."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(PARQUET_MAGIC))
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(size - len(PARQUET_MAGIC), 0))
            tail = handle.read(len(PARQUET_MAGIC))
    except OSError as exc:
        raise ConfigError(f"{option}: cannot read {path!r}: {exc.strerror}") from None
    if size < 3 * len(PARQUET_MAGIC) or head != PARQUET_MAGIC or tail != PARQUET_MAGIC:
        raise ConfigError(
            f"{option}: {path!r} is not a Parquet file ({size} bytes without Parquet's header and footer); "
            "give JSON lines another suffix than .parquet/.parq"
        )


def spark_locations(files: list[str]) -> tuple[list[str], dict[str, str]]:
    """(locations, links): what Spark's reader (with LOCAL_READ_OPTIONS) is given to read exactly ``files``, and
    {link path: file} for the files read through a symbolic link."""
    locations, links = [], {}
    for path in files:
        absolute = os.path.abspath(path)
        if not _hadoop_can_read(absolute):
            link = _link_to(absolute)
            links[link] = absolute
            absolute = link
        locations.append("file:" + re.sub(r"([{}\[\]*?\\])", r"\\\1", absolute))
    return locations, links


def _hadoop_can_read(absolute):
    """Hadoop names any file by its escaped absolute path, except a path with both a ':' and a glob character (its
    Globber rebuilds each name as a relative URI); Spark silently skips names starting with . or _."""
    name = os.path.basename(absolute)
    try:
        absolute.encode("utf-8")
    except UnicodeEncodeError:  # a name that is not UTF-8 cannot cross to the JVM
        return False
    if name.startswith((".", "_")) or name.endswith("._COPYING_"):
        return False
    return not (":" in absolute and any(character in absolute for character in GLOB_CHARACTERS))


def _link_to(absolute):
    """A symbolic link with a plain name to ``absolute``, in a directory removed when the process ends."""
    if "directory" not in _LINKS:
        _LINKS["directory"] = tempfile.mkdtemp(prefix="headroom-pipeline-inputs-")
        atexit.register(shutil.rmtree, _LINKS["directory"], True)
    _LINKS["count"] = _LINKS.get("count", 0) + 1
    suffix = ".parquet" if absolute.endswith(PARQUET_SUFFIXES) else ".jsonl"
    compression = next((ending for ending in COMPRESSED_SUFFIXES if absolute.endswith(ending)), "")
    link = os.path.join(_LINKS["directory"], f"input-{_LINKS['count']:08d}{suffix}{compression}")
    os.symlink(absolute, link)
    return link


def shown_path(absolute: str) -> str:
    """A file's path as messages and rejected rows show it (a name that is not UTF-8 with its odd bytes replaced)."""
    return absolute.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def parse_kafka_url(url: str, option: str = "--snapshots") -> tuple[dict[str, Any], str]:
    """(connection options, topic) from kafka://host:port[,host:port]/topic[?security_protocol=SSL&ssl_cafile=...]."""
    try:
        parsed = urllib.parse.urlsplit(url)
    except ValueError as exc:  # an unbalanced [ of an IPv6 address, say
        raise ConfigError(
            f"{option}: {mask_location(url)!r} is not a URL ({exc}); it must look like kafka://host:port[,host:port]/topic"
        ) from None
    topic = parsed.path.lstrip("/")
    if "@" in parsed.netloc:
        # Never echoed: the text before @ would be a user and password, and would end up in errors and the summary.
        raise ConfigError(
            f"{option}: a kafka:// URL takes no credentials before the host; give sasl_username as a parameter "
            f"and the password in {SECRET_ENVIRONMENT['sasl_password']}"
        )
    if not parsed.netloc or not topic or "/" in topic:
        raise ConfigError(f"{option}: {mask_location(url)!r} must look like kafka://host:port[,host:port]/topic")
    if topic_name_problem(topic):
        # Kafka's own rule; text after the host that breaks it is more likely a misplaced credential than a topic.
        raise ConfigError(
            f"{option}: the topic of {mask_location(url)!r} is not a Kafka topic name "
            "(1 to 249 letters, digits, '.', '_' and '-')"
        )
    options: dict[str, Any] = {"bootstrap_servers": [s for s in parsed.netloc.split(",") if s]}
    for key, values in urllib.parse.parse_qs(parsed.query, keep_blank_values=True).items():
        if key not in KAFKA_OPTIONS:
            raise ConfigError(
                f"{option}: unknown parameter {key!r} in the kafka:// URL; allowed: {', '.join(KAFKA_OPTIONS)} "
                f"(passwords come from {' and '.join(SECRET_ENVIRONMENT.values())})"
            )
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


def read_kafka_records(url: str, option: str = "--snapshots") -> list[KafkaRecord]:
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
        raise ConfigError(
            f"{option}: request_timeout in the kafka:// URL must be a number of seconds greater than 0 (got {text!r})"
        )
    return value


def _text(data):
    if data is None:
        return None
    if isinstance(data, bytes):
        return data.decode("utf-8", errors="replace")
    return str(data)
