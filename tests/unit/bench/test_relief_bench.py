"""The relief benchmark's baselines: the least bytes any subset of replicas frees, and the bytes of the plan
kafka-reassign-partitions --generate prints."""

import pytest
from bench_modules import bench_module


@pytest.mark.parametrize(
    "sizes, needed, least",
    [
        ([1, 2, 3, 5, 8], 9.5, 10),
        ([1, 2, 3, 5, 8], 8, 8),
        ([4, 4, 4], 9, 12),
        ([1, 2], 4, None),
    ],
)
def test_the_least_reaching_subset_is_found_by_trying_every_one(sizes, needed, least):
    assert bench_module("relief_bench").least_reaching(sizes, needed) == least


def test_the_generated_plan_moves_every_replica_that_leaves_broker_2():
    bench = bench_module("relief_bench")
    output = (
        "Current partition replica assignment\n"
        '{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[2],"log_dirs":["any"]},'
        '{"topic":"b","partition":0,"replicas":[2],"log_dirs":["any"]}]}\n\n'
        "Proposed partition reassignment configuration\n"
        '{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[3],"log_dirs":["any"]},'
        '{"topic":"b","partition":0,"replicas":[2],"log_dirs":["any"]}]}\n'
    )
    moved, proposal = bench.generated_bytes(output, {"a": 100, "b": 7})
    assert moved == 100 and len(proposal["partitions"]) == 2
