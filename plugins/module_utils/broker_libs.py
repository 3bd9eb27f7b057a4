# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a broker's libs directory holds, read from its file names and the entry names of its jars, with no I/O."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from typing import Dict, Iterable, List, Mapping, Optional, Tuple

# A Java binary class name: identifiers separated by dots; nested classes keep their '$' (Outer$Inner).
_IDENTIFIER = r"[^\W\d][\w$]*|\$[\w$]*"
JAVA_CLASS_NAME = re.compile(r"^(?:{0})(?:\.(?:{0}))*\Z".format(_IDENTIFIER), re.UNICODE)
# Java's reserved words are no identifiers; "class" in a name is mostly a file name pasted in (Thing.class).
_RESERVED = frozenset(
    "abstract assert boolean break byte case catch char class const continue default do double else enum extends "
    "final finally float for goto if implements import instanceof int interface long native new package private "
    "protected public return short static strictfp super switch synchronized this throw throws transient try void "
    "volatile while true false null".split()
)
# Kafka's server jar names its version: kafka_<scala version>-<version>.jar (every release) and, from 3.7 on,
# kafka-server-<version>.jar. A version is dotted numbers with at most one qualifier (3.7.0-SNAPSHOT, Confluent's
# 7.6.0-ccs); test, source and doc jars are left out below.
KAFKA_SERVER_JAR = re.compile(r"^(?:kafka_\d+\.\d+|kafka-server)-(\d+(?:\.\d+)+(?:-[A-Za-z0-9.]+)?)\.jar$")
# What bin/kafka-run-class.sh leaves off the broker's classpath (its should_include_file): such a jar provides no class.
NOT_ON_CLASSPATH = re.compile(r"(?:-(?:test|test-sources|src|scaladoc|javadoc)\.jar|jar.asc|connect-file.*\.jar)$")
_CLASSIFIERS = ("test", "sources", "src", "javadoc", "scaladoc")


class BrokerLibsError(ValueError):
    """A class name that cannot be looked for; the message names the field and the value."""


def jar_names(file_names: Iterable[str]) -> List[str]:
    """The jars among a directory's file names, sorted."""
    return sorted(name for name in file_names if name.endswith(".jar"))


def on_classpath(jar_name: str) -> bool:
    """Whether bin/kafka-run-class.sh puts a jar of libs/ on the broker's classpath."""
    return jar_name.endswith(".jar") and not NOT_ON_CLASSPATH.search(jar_name)


def version_key(version: str) -> Tuple[Tuple[int, ...], str]:
    """Sort key of a version: its numbers, then its qualifier (3.9.0 < 3.10.0; 4.0.0-rc1 sorts after 4.0.0)."""
    numbers, _dash, qualifier = version.partition("-")
    return tuple(int(part) for part in numbers.split(".") if part.isdigit()), qualifier


def kafka_versions(file_names: Iterable[str]) -> List[str]:
    """Every Kafka version a directory's server jars name (kafka_2.13-4.3.1.jar, kafka-server-4.3.1.jar), once each,
    oldest first. More than one means jars of two releases on one classpath."""
    found = set()
    for name in file_names:
        match = KAFKA_SERVER_JAR.match(name)
        if match and match.group(1).rpartition("-")[2] not in _CLASSIFIERS:
            found.add(match.group(1))
    return sorted(found, key=version_key)


def kafka_version(file_names: Iterable[str]) -> Optional[str]:
    """The Kafka version of a libs directory: the one its server jars name; None when they name none, or several."""
    versions = kafka_versions(file_names)
    return versions[0] if len(versions) == 1 else None


def kafka_major(version: Optional[str]) -> Optional[int]:
    """The release line of a Kafka version (4 for 4.3.1); None for no version or one that does not start with a
    number."""
    match = re.match(r"^(\d+)(?:\.|$)", version or "")
    return int(match.group(1)) if match else None


def class_entry(class_name: object, field: str = "classes") -> str:
    """The entry a jar holds for a Java class: io.strimzi.kafka.quotas.StaticQuotaCallback ->
    io/strimzi/kafka/quotas/StaticQuotaCallback.class."""
    if (
        not isinstance(class_name, str)
        or not JAVA_CLASS_NAME.match(class_name)
        or _RESERVED.intersection(class_name.split("."))
    ):
        raise BrokerLibsError(
            "{0} must hold Java class names such as io.strimzi.kafka.quotas.StaticQuotaCallback (identifiers "
            "separated by dots, '$' for a nested class; got {1!r})".format(field, class_name)
        )
    return class_name.replace(".", "/") + ".class"


def classes_in_jars(entries_by_jar: Mapping[str, Iterable[str]], class_names: Iterable[str]) -> Dict[str, List[str]]:
    """For each class, the jars (sorted) whose entries hold it; jars Kafka leaves off its classpath do not count.
    ``entries_by_jar``: jar name -> the entry names of that jar."""
    wanted = {}
    for index, name in enumerate(class_names):
        wanted[name] = class_entry(name, "classes[{0}]".format(index))
    found: Dict[str, List[str]] = {name: [] for name in wanted}
    for jar in sorted(entries_by_jar):
        if not on_classpath(jar):
            continue
        entries = set(entries_by_jar[jar])
        for name, entry in wanted.items():
            if entry in entries:
                found[name].append(jar)
    return found
