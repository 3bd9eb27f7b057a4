"""Where test clusters take their ports: free blocks, disjoint between pytest-xdist workers, clear of the defaults."""
# pylint: disable=missing-function-docstring

import socket

import pytest

from kafka_testbed.nodes import RANDOM_PORTS_FROM, free_port_block, port_range
from kafka_testbed.testing import worker_ports

COUNT = 12


def test_random_blocks_stay_clear_of_the_default_ports_and_the_ephemeral_range():
    first, last = port_range(COUNT)
    with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="utf-8") as handle:
        low, high = (int(value) for value in handle.read().split())
    assert first >= RANDOM_PORTS_FROM > 19092 + 100
    assert last + COUNT <= low or first > high


def test_without_xdist_the_whole_range_is_used(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)
    assert worker_ports(COUNT) == port_range(COUNT)


@pytest.mark.parametrize("workers", [2, 3, 8])
def test_xdist_workers_draw_from_disjoint_slices(monkeypatch, workers):
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", str(workers))
    slices = []
    for index in range(workers):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", f"gw{index}")
        first, last = worker_ports(COUNT)
        assert first <= last
        slices.append(range(first, last + COUNT))  # every port a block drawn there may take
    whole_first, whole_last = port_range(COUNT)
    for index, ports in enumerate(slices):
        assert whole_first <= ports.start and ports.stop <= whole_last + COUNT
        for other in slices[index + 1 :]:
            assert not set(ports) & set(other), "two workers could pick overlapping blocks"


def test_a_free_block_is_free_and_inside_its_span():
    # This worker's slice: the other worker's clusters never bind there, so nothing can take the block between the
    # draw and the binds below (drawn from the whole range, one of its brokers once did). SO_REUSEADDR as a broker
    # binds: a port left in TIME_WAIT by an earlier cluster of this worker is free for a broker.
    span = worker_ports(COUNT)
    base = free_port_block(COUNT, span=span)
    assert span[0] <= base <= span[1]
    for port in range(base, base + COUNT):
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", port))
