"""The headroom-kafka package (pyproject.toml): its wheel holds the pipeline, the guard and the collection's
module_utils under their import name, and installed it runs both programs with no import path set up."""

import os
import subprocess
import sys
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
MODULE_UTILS = "ansible_collections/headroom/kafka/plugins/module_utils/"
PIPELINE_ONLY_RULES = ("client_quota_math.py", "topic_thresholds.py")


def clean_env():
    """No PYTHONPATH: what a user's shell gives the console scripts."""
    return {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet", "-w", str(out), ROOT],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    (path,) = out.glob("headroom_kafka-*.whl")
    return path


def test_the_wheel_holds_both_programs_and_the_module_utils_by_their_import_name(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        entry_points = next(archive.read(n).decode() for n in names if n.endswith(".dist-info/entry_points.txt"))
    module_utils = sorted(os.listdir(os.path.join(ROOT, "plugins", "module_utils")))
    assert {MODULE_UTILS + name for name in module_utils if name.endswith(".py")} <= names
    assert {"headroom_pipeline/cli.py", "headroom_pipeline/templates/report.html.j2", "headroom_guard/cli.py"} <= names
    # The pipeline's own rules are the pipeline's; nothing of the test cluster or the tests ships.
    assert {"headroom_pipeline/" + name for name in PIPELINE_ONLY_RULES} <= names
    assert not [name for name in names if name.startswith(MODULE_UTILS) and name.endswith(PIPELINE_ONLY_RULES)]
    assert not [name for name in names if name.startswith(("kafka_testbed/", "tests/", "bench/"))]
    # Namespace packages, as in an installed collection: an __init__.py would hide the collection's other parts.
    assert not [name for name in names if name.startswith("ansible_collections/") and name.endswith("__init__.py")]
    assert "headroom-pipeline = headroom_pipeline.cli:main" in entry_points
    assert "headroom-guard = headroom_guard.cli:main" in entry_points


def test_installed_the_wheel_imports_the_rules_from_itself(wheel, tmp_path):
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--target", str(target), str(wheel)],
        check=True,
        timeout=300,
    )
    code = (
        "import headroom_pipeline.config, headroom_guard.guard\n"
        "from ansible_collections.headroom.kafka.plugins.module_utils import volume_limits\n"
        "print(headroom_pipeline.config.__file__, headroom_guard.guard.__file__, volume_limits.__file__)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=str(tmp_path),
        env=dict(clean_env(), PYTHONPATH=str(target)),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert all(path.startswith(str(target)) for path in result.stdout.split())


@pytest.mark.parametrize(
    "script, says", [("headroom-pipeline", "run"), ("headroom-guard", "--config FILE")], ids=["pipeline", "guard"]
)
def test_the_console_scripts_run_from_anywhere(script, says, tmp_path):
    result = subprocess.run(
        [os.path.join(BIN, script), "--help"],
        cwd=str(tmp_path),
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert says in result.stdout
