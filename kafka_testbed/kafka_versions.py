"""What differs between the Apache Kafka releases a real test cluster runs: 3.3 (the first production KRaft and the
first with KIP-827's log dir sizes) to 4.x, in KRaft mode, and before 4.0 also in ZooKeeper mode.

Pure facts, read from each release's sources and checked by the compatibility suite (tests/compat) on a cluster of
that release; the launcher and the tests ask here instead of comparing version strings themselves.
"""

import re

from ansible_collections.headroom.kafka.plugins.module_utils import kafka_releases
from kafka_testbed.nodes import ClusterError

OLDEST = (3, 3)
KRAFT = "kraft"
ZOOKEEPER = "zookeeper"
METADATA_MODES = (KRAFT, ZOOKEEPER)
_RELEASE = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")

# The compatibility matrix (make compat): the newest patch release of every line from 3.3 on that Maven Central
# serves, in KRaft mode, and the 3.x lines also in ZooKeeper mode.
LINES = ("3.3.2", "3.4.1", "3.5.2", "3.6.2", "3.7.2", "3.8.1", "3.9.1", "4.0.2", "4.1.2", "4.2.2", "4.3.1", "4.4.0")
# What make test runs the compatibility suite on: the oldest line in both modes and the newest.
CI_RELEASES = ("3.3.2/kraft", "3.3.2/zookeeper", "4.4.0/kraft")


def matrix():
    """Every ``version/mode`` of the compatibility matrix, oldest first."""
    releases = []
    for version in LINES:
        releases.append(f"{version}/{KRAFT}")
        if KafkaRelease(version).has_zookeeper:
            releases.append(f"{version}/{ZOOKEEPER}")
    return releases


def parse_selection(text):
    """``3.3.2/kraft 4.4.0/kraft`` (spaces or commas), ``all`` for the matrix, ``ci`` for CI_RELEASES: a list of
    (KafkaRelease, mode), each checked."""
    words = [word for word in re.split(r"[\s,]+", text.strip()) if word]
    if words in (["all"], ["matrix"]):
        words = matrix()
    elif words == ["ci"] or not words:
        words = list(CI_RELEASES)
    selection = []
    for word in words:
        version, _slash, mode = word.partition("/")
        release = KafkaRelease(version)
        release.check_mode(mode or KRAFT, "HEADROOM_COMPAT_RELEASES")
        selection.append((release, mode or KRAFT))
    return selection


class NotInRelease(ClusterError):
    """The release (or its metadata mode) lacks what was asked for: a test skips with this reason."""


def parse_release(text, field="KAFKA_VERSION"):
    """(major, minor, patch) of an Apache Kafka release such as ``3.9.1``; ClusterError naming ``field`` otherwise."""
    match = _RELEASE.match(str(text))
    if not match:
        raise ClusterError(f"{field}={text!r}: expected an Apache Kafka release such as 3.9.1 or 4.3.1")
    release = tuple(int(part) for part in match.groups())
    if release[:2] < OLDEST:
        raise ClusterError(
            f"{field}={text!r}: the test cluster runs Apache Kafka 3.3 or newer (3.3 is the first production KRaft "
            "release and the first whose DescribeLogDirs reports total and usable bytes, KIP-827)"
        )
    return release


class KafkaRelease:
    """One release's differences that the launcher and the tests act on."""

    def __init__(self, version):
        self.version = version
        self.release = parse_release(version)

    def __repr__(self):
        return f"KafkaRelease({self.version!r})"

    @property
    def minor(self):
        """``"3.9"``: the release line, as the compatibility table names it."""
        return f"{self.release[0]}.{self.release[1]}"

    @property
    def logging(self):
        """Kafka 4.0 moved to Log4j2; 3.x logs through Log4j 1 (reload4j) behind slf4j-reload4j."""
        return "log4j2" if self.release >= (4, 0) else "reload4j"

    @property
    def has_zookeeper(self):
        """ZooKeeper mode was removed in 4.0."""
        return self.release < (4, 0)

    @property
    def kraft_scram(self):
        """SCRAM credentials in KRaft mode (``kafka-storage format --add-scram``) came with 3.5 (KIP-900)."""
        return self.release >= (3, 5)

    @property
    def share_groups(self):
        """The share coordinator's internal topic (KIP-932) and its settings exist from 4.0."""
        return self.release >= (4, 0)

    @property
    def fenced_broker_callback_fault(self):
        """The release's KRaft brokers throw while a broker is fenced and a quota callback is configured (KAFKA-20746):
        the collection's own table (``kafka_releases``), which the quota_plugin role warns with."""
        return kafka_releases.has_fenced_broker_view_fault(self.version)

    def supports(self, metadata_mode):
        return metadata_mode == KRAFT or (metadata_mode == ZOOKEEPER and self.has_zookeeper)

    def check_mode(self, metadata_mode, field="--metadata"):
        if metadata_mode not in METADATA_MODES:
            raise ClusterError(f"{field} {metadata_mode!r}: expected one of {', '.join(METADATA_MODES)}")
        if not self.supports(metadata_mode):
            raise NotInRelease(
                f"{field} {metadata_mode}: Apache Kafka {self.version} has no ZooKeeper mode (removed in 4.0); "
                "use kraft, or a 3.x release"
            )


def main(argv=None):
    """``python -m kafka_testbed.kafka_versions [--mode kraft] SELECTION``: the selection's releases, one
    ``<version>-<mode>`` per line (for make compat's loops)."""
    import argparse  # pylint: disable=import-outside-toplevel

    parser = argparse.ArgumentParser(prog="python -m kafka_testbed.kafka_versions")
    parser.add_argument("--mode", choices=METADATA_MODES, help="only the releases in this metadata mode")
    parser.add_argument("selection", nargs="?", default="all")
    args = parser.parse_args(argv)
    for release, mode in parse_selection(args.selection):
        if args.mode in (None, mode):
            print(f"{release.version}-{mode}")
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
