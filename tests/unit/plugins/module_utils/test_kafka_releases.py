"""What the modules say about a broker too old for them: the releases it can be and the one needed."""
# pylint: disable=missing-function-docstring

import pytest

from ansible_collections.headroom.kafka.plugins.module_utils.kafka_releases import (
    describe_log_dirs_release,
    describe_log_dirs_too_old,
    has_fenced_broker_view_fault,
    quota_callback_faults,
)


@pytest.mark.parametrize(
    ("max_version", "release"),
    [
        (0, "Kafka older than 3.1"),
        (1, "Kafka older than 3.1"),
        (2, "Kafka older than 3.1"),
        (3, "Kafka 3.1 or 3.2"),
        (4, "Kafka 3.3 or later"),
        (5, "Kafka 3.3 or later"),
    ],
)
def test_the_newest_describe_log_dirs_version_names_the_release(max_version, release):
    assert describe_log_dirs_release(max_version) == release


def test_the_refusal_names_the_broker_its_release_and_the_release_needed():
    assert describe_log_dirs_too_old(2, 3) == (
        "broker 2 answers DescribeLogDirs only up to v3, so it runs Kafka 3.1 or 3.2; total and usable bytes need v4 "
        "(KIP-827, Kafka 3.3 or later): upgrade the broker to Kafka 3.3 or newer"
    )


@pytest.mark.parametrize(
    ("version", "fault"),
    [
        ("3.9.1", False),
        ("4.0.0", True),
        ("4.0.2", True),
        ("4.1.2", True),
        ("4.2.1", True),
        ("4.2.2", False),
        ("4.3.0", True),
        ("4.3.1", True),
        ("4.3.2", False),
        ("4.4.0", False),
        ("4.1.2-rc1", True),
        ("", False),
        ("unknown", False),
    ],
)
def test_the_releases_with_the_fenced_broker_view_fault(version, fault):
    assert has_fenced_broker_view_fault(version) is fault
    assert bool(quota_callback_faults(version)) is fault


def test_the_warning_names_the_release_the_fault_and_the_ways_out():
    (warning,) = quota_callback_faults("4.1.2")
    assert warning.startswith("Kafka 4.1.2 has KAFKA-20746: while a broker is stopped")
    assert "Upgrade to Kafka 4.2.2, 4.3.2 or 4.4.0 or later, or use the disk guard" in warning
