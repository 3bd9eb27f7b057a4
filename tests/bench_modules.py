"""The benchmark's modules (bench/), imported by the tests that hold them to the pipeline: the generator, the
baselines and the floor are code the figures depend on, so they are tested like the rest."""

import importlib
import os
import sys

BENCH_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")


def bench_module(name):
    """The module bench/<name>.py."""
    if BENCH_DIR not in sys.path:
        sys.path.insert(0, BENCH_DIR)
    return importlib.import_module(name)
