"""Fleets of test hosts (containers with systemd and sshd, Kafka under systemd) for the tests in this directory.

The tests here are the lane ``hosts`` (``make hosts``). Every fleet a test starts is removed when the test (or module)
ends, also when it fails; a Docker daemon started for them is stopped once the lane, or ``make test``, is over (the
Makefile runs ``hosts stop-daemon``).
"""

import shutil
import tempfile

import pytest

from kafka_testbed.hosts.fleet import HostFleet


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
