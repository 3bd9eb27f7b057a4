"""Fleets of test hosts (containers with systemd and sshd, Kafka under systemd) for the tests in this directory.

Every fleet a test starts is removed when the test (or module) ends, also when it fails; a Docker daemon started for
them is stopped once the whole run is over (``make pytest`` runs ``hosts stop-daemon``).
"""

import shutil
import tempfile

import pytest

from kafka_testbed.hosts.fleet import HostFleet


def pytest_collection_modifyitems(items):
    """Every test here runs on a fleet: marked ``hosts``, so that ``-m 'not hosts'`` leaves them out."""
    for item in items:
        if "tests/hosts/" in item.nodeid or item.nodeid.startswith("hosts/"):
            item.add_marker(pytest.mark.hosts)


class FleetFactory:
    def __init__(self):
        self.root = tempfile.mkdtemp(prefix="fleet-")
        self.fleets = []

    def __call__(self, brokers=3, controllers=1, **options):
        fleet = HostFleet(tempfile.mkdtemp(prefix="hosts-", dir=self.root))
        self.fleets.append(fleet)
        fleet.up_fleet(brokers, controllers, **options)
        return fleet

    def close(self):
        for fleet in self.fleets:
            fleet.down()
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="module")
def fleet_factory():
    factory = FleetFactory()
    yield factory
    factory.close()


@pytest.fixture(scope="module")
def fleet(fleet_factory):
    """One 3-broker fleet with one controller host for the module."""
    return fleet_factory(3, 1)
