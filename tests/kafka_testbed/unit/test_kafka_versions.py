"""What differs between the Kafka releases the test cluster runs, and the selections of the compatibility suite."""
# pylint: disable=missing-function-docstring

import pytest

from kafka_testbed.kafka_versions import (
    CI_RELEASES,
    LINES,
    KafkaRelease,
    NotInRelease,
    matrix,
    parse_selection,
)
from kafka_testbed.nodes import ClusterError


@pytest.mark.parametrize(
    "version, logging, zookeeper, kraft_scram, share_groups",
    [
        ("3.3.2", "reload4j", True, False, False),
        ("3.4.1", "reload4j", True, False, False),
        ("3.5.0", "reload4j", True, True, False),
        ("3.9.1", "reload4j", True, True, False),
        ("4.0.0", "log4j2", False, True, True),
        ("4.4.0", "log4j2", False, True, True),
    ],
)
def test_each_release_says_what_it_has(version, logging, zookeeper, kraft_scram, share_groups):
    release = KafkaRelease(version)
    assert (release.logging, release.has_zookeeper, release.kraft_scram, release.share_groups) == (
        logging,
        zookeeper,
        kraft_scram,
        share_groups,
    )


@pytest.mark.parametrize("version", ["3.2.3", "2.8.2", "0.11.0"])
def test_releases_before_3_3_are_refused_with_the_reason(version):
    with pytest.raises(ClusterError, match=r"3\.3 or newer .*KIP-827"):
        KafkaRelease(version)


@pytest.mark.parametrize("text", ["4.3", "latest", "4.3.1-rc0", ""])
def test_a_release_is_three_numbers(text):
    with pytest.raises(ClusterError, match=r"expected an Apache Kafka release such as 3\.9\.1"):
        KafkaRelease(text)


def test_zookeeper_mode_is_refused_from_4_0_as_not_in_the_release():
    with pytest.raises(NotInRelease, match=r"Apache Kafka 4\.0\.2 has no ZooKeeper mode \(removed in 4\.0\)"):
        KafkaRelease("4.0.2").check_mode("zookeeper")
    KafkaRelease("3.9.1").check_mode("zookeeper")
    with pytest.raises(ClusterError, match=r"--metadata 'raft': expected one of kraft, zookeeper"):
        KafkaRelease("3.9.1").check_mode("raft")


def test_the_matrix_has_every_line_in_kraft_and_the_3x_lines_in_zookeeper_mode():
    releases = matrix()
    assert [r for r in releases if r.endswith("/kraft")] == [f"{version}/kraft" for version in LINES]
    assert [r for r in releases if r.endswith("/zookeeper")] == [
        f"{version}/zookeeper" for version in LINES if version.startswith("3.")
    ]
    assert LINES[0].startswith("3.3.") and LINES[-1].startswith("4.4.")


def test_selections():
    as_text = [(release.version, mode) for release, mode in parse_selection("")]
    assert as_text == [tuple(entry.split("/")) for entry in CI_RELEASES]
    assert len(parse_selection("all")) == len(matrix())
    assert [(r.version, m) for r, m in parse_selection("3.9.1, 4.4.0/kraft 3.3.2/zookeeper")] == [
        ("3.9.1", "kraft"),
        ("4.4.0", "kraft"),
        ("3.3.2", "zookeeper"),
    ]
    with pytest.raises(NotInRelease, match=r"HEADROOM_COMPAT_RELEASES zookeeper: Apache Kafka 4\.4\.0"):
        parse_selection("4.4.0/zookeeper")
