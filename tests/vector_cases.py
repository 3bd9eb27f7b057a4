"""The shared test vectors (tests/vectors/): loading them and comparing result rows with a vector's expected rows.

module_utils and the Spark stages are held to the same vectors; this is the one place their tests read and compare
them, so both sides judge a vector the same way.
"""

import json
import os

import pytest

VECTORS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vectors")


def load(name):
    """The parsed vector document ``name`` (such as ``topic_thresholds.json``)."""
    with open(os.path.join(VECTORS_DIR, name), encoding="utf-8") as handle:
        return json.load(handle)


def assert_rows(actual, expected, what):
    """Each expected row against the actual row at its position: only the keys it gives, numbers with tolerance
    (JSON does not tell 5 from 5.0, so an integer expected against a float result is compared as a number)."""
    assert len(actual) == len(expected), f"{what}: {len(actual)} rows, expected {len(expected)}: {actual}"
    for index, (got, wanted) in enumerate(zip(actual, expected, strict=True)):
        for key, value in wanted.items():
            where = f"{what}[{index}].{key}"
            if isinstance(value, float) or (isinstance(value, int) and isinstance(got[key], float)):
                assert got[key] == pytest.approx(value, rel=1e-9), where
            else:
                assert got[key] == value, where
