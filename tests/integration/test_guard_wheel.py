"""The guard's wheel (python -m headroom_guard.wheel): it holds headroom_guard and the module_utils it imports under
their own import name, nothing of the pipeline or the tests, and the entry point; it is built again only when what it
holds changes, with the same bytes from the same sources; and installed into a fresh virtual environment with no
Ansible and no PyYAML, it runs.

The kafka-python wheel comes from the package index once, into build/disk-guard-wheels (the wheelhouse the role's
tests use too)."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

import headroom_guard
from headroom_guard import wheel

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WHEELHOUSE = os.path.join(ROOT, "build", "disk-guard-wheels")
MODULE_UTILS = "ansible_collections/headroom/kafka/plugins/module_utils/"
# What the guard needs of the collection's rules, and some of what it does not.
NEEDED = {
    "guard_options",
    "guard_run",
    "guard_memory",
    "guard_history",
    "disk_guard",
    "kafka_adapter",
    "connection",
    "volume_limits",
    "internal_principals",
}
NOT_NEEDED = {"quota_plugin_spec", "topic_thresholds", "pipeline_command", "restart_plan", "client_quota_math"}
VALID = {"bootstrap_servers": ["127.0.0.1:9092"], "min_available_ratio": 0.1, "default_producer_byte_rate": 1000}


def copy_of_the_sources(directory):
    """What the builder reads, copied: the guard, the module_utils, the guard's project file and LICENSE."""
    for name in ("headroom_guard", os.path.join("plugins", "module_utils")):
        shutil.copytree(os.path.join(ROOT, name), os.path.join(directory, name), ignore=shutil.ignore_patterns("*.pyc"))
    for name in wheel.PROJECT_FILES:
        os.makedirs(os.path.join(directory, os.path.dirname(name)), exist_ok=True)
        shutil.copy(os.path.join(ROOT, name), os.path.join(directory, name))
    return str(directory)


@pytest.fixture(scope="module")
def built():
    """The wheelhouse of this checkout: the guard's wheel, kafka-python's and prometheus-client's."""
    return wheel.wheelhouse(WHEELHOUSE)


def wheel_files(built):
    with zipfile.ZipFile(os.path.join(built["wheelhouse"], built["headroom_guard"]["wheel"])) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def test_the_guard_needs_these_module_utils_found_by_following_its_imports():
    needed = {os.path.basename(path)[: -len(".py")] for path in wheel.needed_module_utils(ROOT)}
    assert NEEDED <= needed and not NOT_NEEDED & needed
    assert wheel.shipped_files(ROOT) == sorted(
        [
            os.path.join("headroom_guard", name)
            for name in os.listdir(os.path.join(ROOT, "headroom_guard"))
            if name.endswith(".py") and name != "wheel.py"
        ]
        + wheel.needed_module_utils(ROOT)
        + ["LICENSE", os.path.join("packaging", "headroom-guard", "pyproject.toml")]
    )


def test_the_wheel_holds_the_guard_and_its_module_utils_by_their_import_name(built):
    files = wheel_files(built)
    version = built["headroom_guard"]["version"]
    assert version == f"{headroom_guard.__version__}+{built['headroom_guard']['digest']}"
    assert built["headroom_guard"]["wheel"] == f"headroom_guard-{version}-py3-none-any.whl"
    dist_info = f"headroom_guard-{version}.dist-info/"
    guard = {name for name in files if name.startswith("headroom_guard/")}
    module_utils = {name for name in files if name.startswith(MODULE_UTILS)}
    assert guard == {
        f"headroom_guard/{name}"
        for name in (
            "__init__.py",
            "__main__.py",
            "argument_spec.py",
            "cli.py",
            "config.py",
            "guard.py",
            "history.py",
            "metrics.py",
            "publisher.py",
            "stop_signals.py",
        )
    }
    assert module_utils == {MODULE_UTILS + os.path.basename(path) for path in wheel.needed_module_utils(ROOT)}
    assert set(files) - guard - module_utils == {
        dist_info + name
        for name in ("METADATA", "WHEEL", "entry_points.txt", "top_level.txt", "RECORD", "licenses/LICENSE")
    }, "no pipeline, no tests, no builder, no bytecode, no __init__.py making the collection's namespace a package"
    for name in module_utils:
        assert files[name] == open(os.path.join(ROOT, "plugins", "module_utils", os.path.basename(name)), "rb").read()
    assert "headroom-guard = headroom_guard.cli:main" in files[dist_info + "entry_points.txt"].decode()
    metadata = files[dist_info + "METADATA"].decode()
    assert "Name: headroom-guard\n" in metadata and "Requires-Python: >=3.8\n" in metadata
    requirements = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    assert requirements == [
        "Requires-Dist: kafka-python<4,>=3.0.12",
        "Requires-Dist: prometheus-client<1,>=0.21.1",
        'Requires-Dist: PyYAML>=5.1; extra == "yaml"',
    ]
    assert built["kafka_python"] == {"wheel": "kafka_python-3.0.12-py3-none-any.whl", "version": "3.0.12"}
    assert built["prometheus_client"] == {"wheel": "prometheus_client-0.21.1-py3-none-any.whl", "version": "0.21.1"}


def test_the_wheel_is_built_again_only_when_what_it_holds_changes(tmp_path):
    root = copy_of_the_sources(tmp_path / "collection")
    out = str(tmp_path / "wheels")
    os.makedirs(out)
    for name in ("kafka_python-3.0.12-py3-none-any.whl", "prometheus_client-0.21.1-py3-none-any.whl"):
        shutil.copy(os.path.join(WHEELHOUSE, name), out)  # no download here
    first = wheel.wheelhouse(out, root)
    assert first["built"] and not first["downloaded"]
    path = os.path.join(out, first["headroom_guard"]["wheel"])
    built_at = os.stat(path).st_mtime_ns
    again = wheel.wheelhouse(out, root)
    assert (
        not again["built"]
        and again["headroom_guard"] == first["headroom_guard"]
        and os.stat(path).st_mtime_ns >= built_at
    )
    with open(os.path.join(root, "plugins", "module_utils", "quota_plugin_spec.py"), "a", encoding="utf-8") as handle:
        handle.write("# the quota plugin's rules, which the guard does not ship\n")
    assert not wheel.wheelhouse(out, root)["built"], "a module_util the guard does not import changes nothing"
    with open(os.path.join(root, "plugins", "module_utils", "volume_limits.py"), "a", encoding="utf-8") as handle:
        handle.write("# a rule of the guard's\n")
    changed = wheel.wheelhouse(out, root)
    assert changed["built"] and changed["headroom_guard"]["digest"] != first["headroom_guard"]["digest"]
    assert sorted(os.listdir(out)) == sorted(
        [
            ".lock",
            first["headroom_guard"]["wheel"],
            changed["headroom_guard"]["wheel"],
            first["kafka_python"]["wheel"],
            first["prometheus_client"]["wheel"],
        ]
    ), "the other wheel stays until it has not been used for a while (another checkout may use it)"


def test_the_same_sources_make_the_same_bytes(tmp_path, built):
    out = str(tmp_path)
    name = wheel.build_wheel(ROOT, out, wheel.shipped_files(ROOT), built["headroom_guard"]["version"])
    with open(os.path.join(out, name), "rb") as mine, open(os.path.join(WHEELHOUSE, name), "rb") as theirs:
        assert hashlib.sha256(mine.read()).digest() == hashlib.sha256(theirs.read()).digest()


def test_a_kafka_python_wheel_that_is_not_the_pinned_one_is_not_used(tmp_path):
    out = str(tmp_path)
    with open(os.path.join(out, "kafka_python-3.0.12-py3-none-any.whl"), "wb") as handle:
        handle.write(b"not the wheel")
    env = dict(os.environ, PIP_INDEX_URL="http://127.0.0.1:9/simple", PIP_RETRIES="0", PIP_TIMEOUT="2")
    env.pop("PIP_FIND_LINKS", None)
    result = subprocess.run(
        [sys.executable, "-m", "headroom_guard.wheel", "--out", out],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith(
        f"headroom_guard.wheel: kafka-python 3.0.12 (sha256 {wheel.KAFKA_PYTHON_SHA256}) could not be downloaded"
    )
    assert f"put the wheel, kafka_python-3.0.12-py3-none-any.whl, into {out}" in result.stderr


def test_the_command_line_prints_what_the_wheelhouse_holds(tmp_path, built):
    """As the role runs it (the collection root is the working directory there), here from elsewhere with a relative
    --out."""
    out = tmp_path / "wheels"
    out.mkdir()
    for dependency in ("kafka_python", "prometheus_client"):
        shutil.copy(os.path.join(WHEELHOUSE, built[dependency]["wheel"]), out)
    result = subprocess.run(
        [sys.executable, "-m", "headroom_guard.wheel", "--out", "wheels"],
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=ROOT, PYTHONDONTWRITEBYTECODE="1"),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == dict(built, wheelhouse=str(out), built=True, downloaded=False)
    assert sorted(os.listdir(out)) == [
        ".lock",
        built["headroom_guard"]["wheel"],
        built["kafka_python"]["wheel"],
        built["prometheus_client"]["wheel"],
    ]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--kafka-python", "3.0.13"], "--kafka-python 3.0.13 needs --kafka-python-sha256"),
        (["--kafka-python-sha256", "ABC"], "--kafka-python-sha256 must be the sha256 of the kafka-python 3.0.12 wheel"),
        (["--kafka-python", "latest", "--kafka-python-sha256", "0" * 64], "--kafka-python must be a version such as"),
        (["--prometheus-client", "0.22.0"], "--prometheus-client 0.22.0 needs --prometheus-client-sha256"),
        (
            ["--prometheus-client-sha256", "x"],
            "--prometheus-client-sha256 must be the sha256 of the prometheus-client 0.21.1 wheel",
        ),
    ],
)
def test_bad_options_are_refused_naming_the_option_and_the_value(tmp_path, args, message):
    result = subprocess.run(
        [sys.executable, "-m", "headroom_guard.wheel", "--out", str(tmp_path), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode in (1, 2) and message in result.stderr, result.stderr


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory):
    """A virtual environment of this machine's Python with nothing installed (pip and what ensurepip brings)."""
    directory = tmp_path_factory.mktemp("guard-venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(directory)], check=True, timeout=300)
    return directory


def test_a_python_without_a_recent_setuptools_is_told_what_to_install(fresh_venv, tmp_path, built):
    python = str(fresh_venv / "bin" / "python")
    probe = subprocess.run(
        [python, "-c", "import setuptools; print(setuptools.__version__)"], capture_output=True, text=True, check=False
    )
    if probe.returncode == 0 and tuple(int(part) for part in probe.stdout.split(".")[:2]) >= (70, 1):
        pytest.skip(f"ensurepip brings setuptools {probe.stdout.strip()}, which builds wheels")
    with pytest.raises(wheel.BuildError, match=r"needs .*setuptools.* pip install 'setuptools>=70\.1'"):
        wheel.build_wheel(ROOT, str(tmp_path), wheel.shipped_files(ROOT), built["headroom_guard"]["version"], python)


def run_in(venv, *command, cwd):
    return subprocess.run(
        [str(venv / "bin" / command[0]), *command[1:]],
        cwd=cwd,
        env={key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "PIP_"))},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_installed_without_ansible_and_pyyaml_it_runs_and_checks_its_configuration(fresh_venv, tmp_path, built):
    installed = run_in(
        fresh_venv,
        "python",
        "-m",
        "pip",
        "install",
        "--no-index",
        "--find-links",
        built["wheelhouse"],
        os.path.join(built["wheelhouse"], built["headroom_guard"]["wheel"]),
        cwd=tmp_path,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    for module in ("ansible", "yaml", "headroom_pipeline"):
        assert run_in(fresh_venv, "python", "-c", f"import {module}", cwd=tmp_path).returncode == 1, module
    where = run_in(fresh_venv, "python", "-c", "import headroom_guard; print(headroom_guard.__file__)", cwd=tmp_path)
    assert where.stdout.startswith(str(fresh_venv)), "the installed guard, not this checkout"

    helped = run_in(fresh_venv, "headroom-guard", "--help", cwd=tmp_path)
    assert helped.returncode == 0 and helped.stdout.startswith("usage: headroom-guard [-h] --config FILE")
    version = run_in(fresh_venv, "headroom-guard", "--version", cwd=tmp_path)
    assert version.stdout == f"headroom-guard {built['headroom_guard']['version']}\n"

    config = tmp_path / "guard.json"
    config.write_text(json.dumps(dict(VALID, sasl_password="secret-never-shown")), encoding="utf-8")
    checked = run_in(fresh_venv, "headroom-guard", "--config", str(config), "--check-config", cwd=tmp_path)
    assert checked.returncode == 2
    assert "parameters are required together: sasl_username, sasl_password" in checked.stderr
    assert "secret-never-shown" not in checked.stderr
    config.write_text(json.dumps(VALID), encoding="utf-8")
    checked = run_in(fresh_venv, "headroom-guard", "--config", str(config), "--check-config", cwd=tmp_path)
    assert (checked.returncode, checked.stderr) == (0, f"headroom_guard: --config {str(config)!r} is valid\n")
    checked = run_in(
        fresh_venv, "python", "-m", "headroom_guard", "--config", str(config), "--check-config", cwd=tmp_path
    )
    assert checked.returncode == 0, checked.stderr

    config.write_text("bootstrap_servers: [127.0.0.1:9092]\n", encoding="utf-8")
    refused = run_in(fresh_venv, "headroom-guard", "--config", str(config), "--check-config", cwd=tmp_path)
    assert refused.returncode == 2
    assert "is not JSON (Expecting value: line 1 column 1 (char 0)), and reading YAML needs PyYAML" in refused.stderr
