"""Every module fed generated arguments, against a running broker: tame arguments (valid by construction) with zero,
one or two options replaced by hostile values drawn from the option's argument spec (non-finite, huge, negative,
empty, unicode, very long, wrong types).

Whatever the input: no unhandled exception, no run past its time bound, no result key Ansible reserves. Tame input
succeeds. A refusal names an option the task was given, and a non-finite number is always refused naming its option.
"""

import math
import os
import shutil
import sys
import tempfile

import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

from kafka_testbed.testing import ClusterFactory

sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "unit", "plugins", "modules")
)
from module_runner import MODULES, module_code, run_module  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.headroom.kafka.plugins.module_utils import option_checks  # noqa: E402

EXAMPLES_PER_MODULE = 300
# Keys Ansible adds to every result, or that a module returns for their Ansible meaning (diff in diff mode).
ANSIBLE_OWN_KEYS = {"changed", "failed", "msg", "invocation", "warnings", "deprecations", "diff", "exception"}
# A bound for one run: a refusal is immediate; a run that talks to the broker takes a few requests.
RUN_SECONDS = 15.0
TAME_REQUEST_TIMEOUT = 2

# -- hostile values, by argument spec type ----------------------------------------------------------------------------
NON_FINITE = (float("nan"), float("inf"), float("-inf"))
HOSTILE_FLOATS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(NON_FINITE + (0.0, -0.0, -1.0, 1e308, -1e308, 5e-324, 2.0**63, 0.5)),
    st.sampled_from(["nan", "inf", "-Infinity", "1e400", "ten", ""]),
)
HOSTILE_INTS = st.one_of(
    st.integers(),
    st.sampled_from([0, -1, 2**31 - 1, 2**31, -(2**31), 2**63 - 1, 2**63, 10**30]),
    st.sampled_from(["1.5", "x", "", 1.5, float("nan")]),
)
HOSTILE_TEXT = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["", " ", "\x00", "ü" * 300, "a" * 20000, "../../etc", "line\nbreak", "%s{{ x }}", "PT5M", "-1"]),
)
HOSTILE_SCALARS = st.one_of(HOSTILE_FLOATS, HOSTILE_INTS, HOSTILE_TEXT, st.booleans(), st.none())
HOSTILE_JSON = st.recursive(
    HOSTILE_SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=6,
)
# Keys of the list-of-dict options without suboptions: log dir rows and snapshot messages.
ROW_KEYS = ("broker_id", "log_dir", "total_bytes", "usable_bytes", "error")
MESSAGE_KEYS = ("SnapshotAt", "BrokerId", "ClusterId", "Volumes", "SoftLimit", "HardLimit")
HOSTILE_ROWS = st.lists(st.dictionaries(st.sampled_from(ROW_KEYS + ("x",)), HOSTILE_SCALARS, max_size=6), max_size=4)
HOSTILE_MESSAGES = st.lists(
    st.one_of(
        st.dictionaries(st.sampled_from(MESSAGE_KEYS), HOSTILE_JSON, max_size=6),
        st.fixed_dictionaries(
            {
                "SnapshotAt": st.one_of(
                    HOSTILE_TEXT,
                    st.sampled_from(
                        [
                            "9999-12-31T23:59:59-23:59",
                            "0001-01-01T00:00:00+23:59",
                            "0000-01-01T00:00:00Z",
                            "1970-01-01T00:00:00Z",
                        ]
                    ),
                ),
                "BrokerId": HOSTILE_INTS,
                "Volumes": st.lists(
                    st.fixed_dictionaries(
                        {"VolumeName": HOSTILE_TEXT, "Capacity": HOSTILE_INTS, "Consumed": HOSTILE_INTS}
                    ),
                    max_size=3,
                ),
            }
        ),
    ),
    max_size=3,
)


def hostile(name, spec):
    """A strategy of hostile values for one option of an argument spec."""
    kind = spec.get("type", "str")
    if spec.get("no_log"):
        # Ansible masks a secret's value wherever it appears in the result; a one-letter password would mask that
        # letter in every word of the message. Passwords here are as long as real ones.
        return st.text(min_size=1, max_size=30).map(lambda text: "secret-" + text)
    if kind == "float":
        return HOSTILE_FLOATS
    if kind == "int":
        return HOSTILE_INTS
    if kind == "bool":
        return st.one_of(st.booleans(), st.sampled_from(["maybe", 2, ""]))
    if kind in ("str", "path"):
        choices = spec.get("choices")
        return st.one_of(st.sampled_from(choices), HOSTILE_TEXT) if choices else HOSTILE_TEXT
    if kind == "dict":
        options = spec.get("options")
        if not options:
            return st.dictionaries(st.text(max_size=8), HOSTILE_SCALARS, max_size=3)
        return st.fixed_dictionaries({}, optional={key: hostile(key, sub) for key, sub in options.items()})
    if kind == "list":
        elements = spec.get("elements", "str")
        if elements == "dict" and spec.get("options"):
            return st.lists(hostile(name, {"type": "dict", "options": spec["options"]}), max_size=3)
        if elements == "dict":
            return HOSTILE_MESSAGES if name == "snapshots" else HOSTILE_ROWS
        return st.lists(hostile(name, {"type": elements}), max_size=4)
    return HOSTILE_SCALARS


# -- tame values, by module -------------------------------------------------------------------------------------------
def tame_rows():
    row = st.fixed_dictionaries(
        {
            "broker_id": st.integers(0, 3),
            "log_dir": st.sampled_from(["/data/a", "/data/b", "/d/ü"]),
            "total_bytes": st.integers(0, 2**40),
            "usable_bytes": st.integers(-1, 2**40),
        }
    )
    return st.lists(row, max_size=4, unique_by=lambda r: (r["broker_id"], r["log_dir"]))


def tame_limits():
    return st.tuples(st.integers(1000, 2**40), st.integers(0, 999)).map(
        lambda levels: ({"type": "min_free_bytes", "level": levels[0]}, {"type": "min_free_bytes", "level": levels[1]})
    )


def tame_args(module, workdir):
    """A strategy of argument sets the module must accept (the connection options are added by the test)."""
    path = os.path.join(workdir, "usage.jsonl")
    if module == "cluster_health_info":
        return st.fixed_dictionaries(
            {},
            optional={
                "expected_brokers": st.just([1]),
                "wait_timeout": st.sampled_from([0, 2]),
                "wait_interval": st.sampled_from([0.05, 0.2]),
                "wait_consecutive": st.integers(1, 3),
                # a broker that holds no partition: nothing falls below min.insync.replicas without it
                "stopping_broker": st.just(7),
            },
        )
    if module == "log_dirs_info":
        return st.fixed_dictionaries({}, optional={"fail_on_missing": st.booleans()})
    if module == "log_dir_relief":
        # One broker with one log dir: a plan never has a destination, so no run moves or waits.
        return st.integers(0, 2**40).flatmap(
            lambda level: st.fixed_dictionaries(
                {
                    "relieve_at": st.just({"type": "min_free_bytes", "level": level}),
                    "relieve_to": st.just({"type": "min_free_bytes", "level": level + 1}),
                },
                optional={
                    "max_bytes": st.integers(1, 2**40),
                    "max_partitions": st.integers(1, 100),
                    "throttle_rate": st.integers(1, 2**30),
                    "wait": st.booleans(),
                    "timeout": st.sampled_from([1, 60]),
                    "poll_interval": st.sampled_from([0.1, 2]),
                },
            )
        )
    if module == "client_quota_info":
        return st.one_of(
            st.fixed_dictionaries(
                {},
                optional={
                    "user": st.sampled_from(["alice", "bob"]),
                    "client_id": st.just("app"),
                    "strict": st.booleans(),
                },
            ),
            st.fixed_dictionaries({"ip": st.sampled_from(["10.0.0.1", "::1"])}),
        )
    if module == "client_quota":
        entity = st.fixed_dictionaries({"user": st.sampled_from(["alice", "bob", "carol"])})
        quota = st.one_of(
            st.fixed_dictionaries({"entity": entity, "producer_byte_rate": st.integers(1024, 10**12)}),
            st.fixed_dictionaries({"entity": entity, "state": st.just("absent")}),
        )
        return st.fixed_dictionaries(
            {"quotas": st.lists(quota, min_size=1, max_size=3, unique_by=lambda q: q["entity"]["user"])}
        )
    if module == "usage_snapshot":
        return tame_limits().flatmap(
            lambda limits: st.fixed_dictionaries(
                {"soft_limit": st.just(limits[0]), "hard_limit": st.just(limits[1])},
                optional={"log_dirs": tame_rows(), "topic": st.just("usage-props"), "path": st.just(path)},
            ).filter(lambda args: "topic" in args or "path" in args)
        )
    if module == "usage_snapshot_info":
        return st.fixed_dictionaries(
            {"path": st.just(path)},
            optional={
                "topic": st.just("usage-props"),
                "max_age": st.sampled_from(["PT5M", "60", "P1D"]),
                "expected_brokers": st.just([1]),
            },
        )
    if module == "volume_limits":
        source = st.fixed_dictionaries({}, optional={"log_dirs": tame_rows()})
        strimzi = st.one_of(
            st.fixed_dictionaries({"min_available_bytes": st.integers(0, 2**40)}),
            st.fixed_dictionaries({"min_available_ratio": st.floats(0, 1)}),
        )
        graded = tame_limits().map(
            lambda limits: {"policy": "graded", "soft_limit": limits[0], "hard_limit": limits[1]}
        )
        return st.tuples(
            source,
            st.one_of(strimzi, graded),
            st.fixed_dictionaries(
                {}, optional={"produce_byte_rate": st.floats(1, 1e12), "expected_brokers": st.just([1])}
            ),
        ).map(lambda parts: {**parts[0], **parts[1], **parts[2]})
    if module == "disk_guard":
        source = st.fixed_dictionaries({}, optional={"log_dirs": tame_rows()})
        strimzi = st.fixed_dictionaries(
            {"min_available_ratio": st.floats(0, 1)},
            optional={
                "throttle_factor_fallback": st.floats(0, 1),
                "throttle_factor_validity": st.sampled_from(["PT5M", "60", "PT0S"]),
            },
        )
        graded = tame_limits().map(
            lambda limits: {"policy": "graded", "soft_limit": limits[0], "hard_limit": limits[1]}
        )
        declaration = st.fixed_dictionaries(
            {"default_producer_byte_rate": st.integers(1, 2**40)},
            optional={
                "quotas": st.just(
                    [{"entity": {"user": "props"}, "producer_byte_rate": 4096, "consumer_byte_rate": 8192}]
                ),
                "excluded_principals": st.just(["User:ops"]),
                "expected_brokers": st.just([1]),
                "state_file": st.just(os.path.join(workdir, "guard-state.json")),
            },
        )
        return st.tuples(source, st.one_of(strimzi, graded), declaration).map(
            lambda parts: {**parts[0], **parts[1], **parts[2]}
        )
    raise AssertionError(module)


# -- the property -----------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cluster():
    root = tempfile.mkdtemp(prefix="module-properties-")
    factory = ClusterFactory(root)
    try:
        yield factory(1)
    finally:
        factory.close()
        shutil.rmtree(root, ignore_errors=True)


def _wait_seconds(module, args):
    """How long cluster_health_info may wait by its valid wait options (0 when they are not valid or not waiting)."""
    if module != "cluster_health_info":
        return 0.0
    code = module_code(module)
    values = {"wait_timeout": 0.0, "wait_interval": 0.5, "wait_consecutive": 3}
    for name in values:
        value = args.get(name, values[name])
        if not isinstance(value, (int, float)) or isinstance(value, bool) or code.OPTION_RANGES[name].problem(value):
            return 0.0
        values[name] = value
    return float(values["wait_timeout"])


def _names_an_option(message, args):
    names = set(args) | {"bootstrap servers"}
    return any(name in message for name in names)


@pytest.mark.slow
@pytest.mark.parametrize("module", MODULES)
def test_generated_arguments(module, cluster, tmp_path_factory, monkeypatch):
    workdir = str(tmp_path_factory.mktemp(module))
    monkeypatch.chdir(workdir)  # generated relative paths land here, not in the checkout
    spec = module_code(module).ARGUMENT_SPEC
    fuzzable = sorted(name for name in spec if name != "bootstrap_servers") + ["bootstrap_servers"]
    connection = {
        "bootstrap_servers": cluster.info["bootstrap_servers"].split(","),
        "request_timeout": TAME_REQUEST_TIMEOUT,
    }

    @settings(
        max_examples=EXAMPLES_PER_MODULE,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
    )
    @given(data=st.data())
    def check(data):
        args = dict(connection, **data.draw(tame_args(module, workdir), label="tame"))
        replaced = data.draw(st.lists(st.sampled_from(fuzzable), max_size=2, unique=True), label="hostile options")
        for name in replaced:
            if name == "bootstrap_servers":
                args[name] = data.draw(
                    st.lists(
                        st.one_of(HOSTILE_TEXT, st.sampled_from(["127.0.0.1:1", "127.0.0.1:0", "[::1]:1"])), max_size=3
                    ),
                    label=name,
                )
            else:
                args[name] = data.draw(hostile(name, spec[name]), label=name)
        # A valid wait (or request timeout) of an hour on an unreachable cluster is the documented behaviour, too long
        # here.
        waits = _wait_seconds(module, args)
        timeout = args.get("request_timeout")
        if (
            not isinstance(timeout, (int, float))
            or isinstance(timeout, bool)
            or option_checks.REQUEST_TIMEOUT.problem(timeout)
        ):
            timeout = 0.0
        assume(waits <= 3 and timeout <= 5)
        servers = args["bootstrap_servers"] if isinstance(args["bootstrap_servers"], list) else []
        check_mode = data.draw(st.booleans(), label="check mode")
        run = run_module(module, args, check_mode=check_mode)
        note(f"{module} {'failed: ' + run.msg if run.failed else 'ok'} in {run.elapsed:.2f}s")
        # Each bootstrap server gets one request timeout to answer; a wait adds its timeout.
        assert run.elapsed < RUN_SECONDS + waits + len(servers) * timeout, f"{run.elapsed:.1f}s"
        assert not option_checks.data_keys_clash(set(run.result) - ANSIBLE_OWN_KEYS)
        if not replaced:
            assert not run.failed, f"tame input refused: {run.msg}"
        if run.failed:
            assert run.msg and _names_an_option(run.msg, args), run.msg
        non_finite = [
            name
            for name in replaced
            if spec[name].get("type") in ("float", "int")
            and isinstance(args[name], float)
            and not math.isfinite(args[name])
        ]
        if non_finite:
            assert run.failed and any(name in run.msg for name in replaced), f"{non_finite}: {run.msg or 'accepted'}"
        counted.append("refused" if run.failed else "accepted")

    counted = []
    check()
    print(
        f"{module}: {len(counted)} generated argument sets run, {counted.count('accepted')} accepted, "
        f"{counted.count('refused')} refused"
    )
