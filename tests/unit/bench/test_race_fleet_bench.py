"""The fleet race benchmark's readings: the guard's decisions from its journal, and the peak fill rate of a trial whose
volumes never cross the limit."""

from bench_modules import bench_module

from headroom_guard.guard import decision_line

MIB = 1 << 20


def decision(factor, changes, decided_at=1764878400.0):
    result = {
        "changes": [{}] * changes,
        "decided_at": decided_at,
        "throttle_factor": factor,
        "state": "throttled" if factor < 1 else "ok",
        "policy": "strimzi",
        "reason": "broker 2 data-0: 60 MiB free, limit 64 MiB",
    }
    return decision_line(result, 0.125)


def test_the_guards_decisions_are_read_from_its_journal_lines_from_the_trials_start_on():
    bench = bench_module("race_fleet_bench")
    journal = "\n".join(
        [
            f"1764878399.500000 broker-1 headroom-guard[812]: {decision(1.0, 0)}",
            "1764878400.100000 broker-1 systemd[1]: Started headroom-disk-guard.service",
            f"1764878401.250000 broker-1 headroom-guard[812]: {decision(1.0, 1)}",
            f"1764878431.750000 broker-1 headroom-guard[812]: {decision(0.0, 2)}",
            "1764878432.000000 broker-1 headroom-guard[812]: relief idle: nothing at relieve_at",
        ]
    )
    decisions = bench.decisions_in(journal, since=1764878400.0)
    assert [(d["end"], d["factor"], d["seconds"]) for d in decisions] == [
        (1764878401.25, 1.0, 0.125),
        (1764878431.75, 0.0, 0.125),
    ]


def test_the_peak_fill_rate_is_the_fastest_second_after_the_writers_settled():
    bench = bench_module("race_fleet_bench")
    # Broker 1 fills at 10 MiB/s, then at 40 MiB/s from 4 s on; broker 2 at 20 MiB/s throughout; the first 2 s (at
    # 100 MiB/s on broker 2, a burst while connecting) are not counted.
    samples = []
    free = {1: 2048 * MIB, 2: 2048 * MIB}
    for step in range(0, 81):
        at = step / 10
        samples.append((1000.0 + at, dict(free)))
        free[1] -= (40 if at >= 4 else 10) * MIB / 10
        free[2] -= (100 if at < 2 else 20) * MIB / 10
    assert abs(bench.peak_rate(samples) - 40 * MIB) < 0.01 * MIB
