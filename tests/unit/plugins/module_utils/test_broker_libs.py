"""What a broker's libs directory holds: Kafka's version from jar names, class names as jar entries, which jar
provides a class."""

import pytest

from ansible_collections.headroom.kafka.plugins.module_utils.broker_libs import (
    BrokerLibsError,
    class_entry,
    classes_in_jars,
    jar_names,
    kafka_major,
    kafka_version,
    kafka_versions,
    on_classpath,
)

APACHE_4_3 = [
    "kafka-clients-4.3.1.jar",
    "kafka-server-4.3.1.jar",
    "kafka-server-common-4.3.1.jar",
    "kafka_2.13-4.3.1.jar",
]


@pytest.mark.parametrize(
    ("names", "versions", "version"),
    [
        (APACHE_4_3, ["4.3.1"], "4.3.1"),
        (["kafka_2.12-3.7.0.jar", "kafka-clients-3.7.0.jar"], ["3.7.0"], "3.7.0"),
        # Before 3.7 there is no kafka-server jar; kafka-server-common does not name the server's version.
        (["kafka_2.13-3.3.2.jar", "kafka-server-common-3.3.2.jar"], ["3.3.2"], "3.3.2"),
        (["kafka-server-4.0.0.jar"], ["4.0.0"], "4.0.0"),
        # Confluent Platform numbers its releases its own way; the qualifier is kept, and so is a snapshot's.
        (["kafka_2.13-7.6.0-ccs.jar", "kafka-clients-7.6.0-ccs.jar"], ["7.6.0-ccs"], "7.6.0-ccs"),
        (["kafka_2.13-4.1.0-SNAPSHOT.jar"], ["4.1.0-SNAPSHOT"], "4.1.0-SNAPSHOT"),
        # Test, source and doc jars of the server name a version too, but are not the server.
        (["kafka_2.13-4.3.1-test.jar", "kafka_2.13-4.3.1-sources.jar", "kafka_2.13-4.3.1-javadoc.jar"], [], None),
        (["kafka_2.13-4.3.1-test-sources.jar", "kafka_2.13-4.3.1-scaladoc.jar"], [], None),
        # No server jar: not a Kafka libs directory (or a client-only one).
        (["kafka-clients-4.3.1.jar", "kafka-streams-4.3.1.jar", "kafka-quotas-plugin-0.3.1.jar"], [], None),
        ([], [], None),
        # Two releases' jars in one directory: both reported, oldest first, and no single version.
        (["kafka_2.13-3.10.0.jar", "kafka_2.13-3.9.1.jar", "kafka-server-3.10.0.jar"], ["3.9.1", "3.10.0"], None),
        (["kafka_2.13-4.3.1.jar", "kafka-server-4.3.1.jar"], ["4.3.1"], "4.3.1"),
        # Names that only look alike.
        (
            ["kafka_2.13.jar", "kafka_2.13-.jar", "kafka_2.13-x.y.jar", "mykafka_2.13-4.3.1.jar", "kafka_2.13-4.jar"],
            [],
            None,
        ),
    ],
)
def test_kafka_version_from_jar_names(names, versions, version):
    assert kafka_versions(names) == versions
    assert kafka_version(names) == version


@pytest.mark.parametrize(
    ("version", "major"),
    [("4.3.1", 4), ("3.7.0", 3), ("10.0.0", 10), ("7.6.0-ccs", 7), ("4", 4), (None, None), ("", None), ("x.1", None)],
)
def test_kafka_major(version, major):
    assert kafka_major(version) == major


@pytest.mark.parametrize(
    ("class_name", "entry"),
    [
        ("io.strimzi.kafka.quotas.StaticQuotaCallback", "io/strimzi/kafka/quotas/StaticQuotaCallback.class"),
        ("io.prometheus.jmx.JavaAgent", "io/prometheus/jmx/JavaAgent.class"),
        ("Plain", "Plain.class"),
        ("org.example.Outer$Inner", "org/example/Outer$Inner.class"),
        ("org.example._private.$Gen", "org/example/_private/$Gen.class"),
        ("org.exämple.Grüße", "org/exämple/Grüße.class"),
    ],
)
def test_class_entry(class_name, entry):
    assert class_entry(class_name) == entry


@pytest.mark.parametrize(
    "class_name",
    [
        "",
        "io/strimzi/Thing",
        "io.strimzi.",
        ".Thing",
        "io..Thing",
        "io.strimzi.Thing.class",
        "1io.Thing",
        "io.1Thing",
        "io.Thing Other",
        "io.Thing\n",
        "io.class.Thing",
        None,
        3,
        ["io.Thing"],
    ],
)
def test_class_entry_refuses_what_is_not_a_class_name(class_name):
    with pytest.raises(BrokerLibsError, match=r"^classes must hold Java class names such as io\.strimzi"):
        class_entry(class_name)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("kafka-quotas-plugin-0.3.1.jar", True),
        ("kafka_2.13-4.3.1.jar", True),
        ("kafka-quotas-plugin-0.3.1-sources.jar", True),  # kafka-run-class.sh leaves only the names below out
        ("kafka_2.13-4.3.1-test.jar", False),
        ("kafka_2.13-4.3.1-test-sources.jar", False),
        ("kafka_2.13-4.3.1-javadoc.jar", False),
        ("kafka_2.13-4.3.1-scaladoc.jar", False),
        ("kafka_2.13-4.3.1-src.jar", False),
        ("connect-file-4.3.1.jar", False),
        ("kafka_2.13-4.3.1.jar.asc", False),
        ("README", False),
    ],
)
def test_on_classpath(name, expected):
    assert on_classpath(name) is expected


PLUGIN = "io.strimzi.kafka.quotas.StaticQuotaCallback"
AGENT = "io.prometheus.jmx.JavaAgent"


@pytest.mark.parametrize(
    ("entries_by_jar", "classes", "expected"),
    [
        (
            {"kafka-quotas-plugin-0.3.1.jar": ["META-INF/", "io/strimzi/kafka/quotas/StaticQuotaCallback.class"]},
            [PLUGIN],
            {PLUGIN: ["kafka-quotas-plugin-0.3.1.jar"]},
        ),
        ({"kafka-clients-4.3.1.jar": ["org/apache/kafka/Thing.class"]}, [PLUGIN, AGENT], {PLUGIN: [], AGENT: []}),
        # Two versions of the plugin on one classpath: both named, in name order.
        (
            {
                "kafka-quotas-plugin-0.3.1.jar": ["io/strimzi/kafka/quotas/StaticQuotaCallback.class"],
                "kafka-quotas-plugin-0.3.0.jar": ["io/strimzi/kafka/quotas/StaticQuotaCallback.class"],
            },
            [PLUGIN],
            {PLUGIN: ["kafka-quotas-plugin-0.3.0.jar", "kafka-quotas-plugin-0.3.1.jar"]},
        ),
        # A class in a jar Kafka leaves off its classpath is not loadable.
        ({"plugin-0.3.1-test.jar": ["io/strimzi/kafka/quotas/StaticQuotaCallback.class"]}, [PLUGIN], {PLUGIN: []}),
        # A directory entry or a prefix is not the class.
        (
            {
                "a.jar": [
                    "io/strimzi/kafka/quotas/StaticQuotaCallback/",
                    "io/strimzi/kafka/quotas/StaticQuotaCallback.clas",
                ]
            },
            [PLUGIN],
            {PLUGIN: []},
        ),
        ({"a.jar": ["x.class"]}, [], {}),
    ],
)
def test_classes_in_jars(entries_by_jar, classes, expected):
    assert classes_in_jars(entries_by_jar, classes) == expected


def test_classes_in_jars_names_the_bad_entry():
    with pytest.raises(BrokerLibsError, match=r"^classes\[1\] must hold Java class names .*; got 'a/b'\)$"):
        classes_in_jars({}, [PLUGIN, "a/b"])


def test_jar_names():
    assert jar_names(["b.jar", "a.jar", "notes.txt", "c.jar.asc", "d.JAR"]) == ["a.jar", "b.jar"]
