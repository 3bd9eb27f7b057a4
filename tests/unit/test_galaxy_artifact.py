"""The Galaxy artifact holds the collection and what its roles run, and none of the development tooling: the Kafka
test cluster package, the benchmarks, build outputs and caches stay out (galaxy.yml's build_ignore)."""

import os
import subprocess
import sys
import tarfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GALAXY = os.path.join(os.path.dirname(sys.executable), "ansible-galaxy")
SHIPPED_TOP_LEVEL = {
    "FILES.json",
    "MANIFEST.json",
    "LICENSE",
    "README.md",
    "changelogs",
    "dashboards",  # the Grafana dashboard (JSON for file provisioning) and its generator
    "docs",  # the guides (docs/docsite), which the README links to and the collection docsite renders
    "extensions",
    "headroom_guard",  # the disk_guard role builds the guard's wheel from it and packaging/headroom-guard
    "packaging",
    "pyproject.toml",  # the package headroom-kafka: the pipeline and the guard, pip-installable from the collection
    "requirements.txt",  # the collection's Python requirements, which ansible-builder reads
    "headroom_pipeline",  # the usage_pipeline role runs it
    "meta",
    "playbooks",
    "plugins",
    "roles",
    "tests",
}
KEPT_OUT = (
    "kafka_testbed/",
    "kafka_sim/",
    "bench/",
    "build/",
    "scripts/",
    "tests/kafka_testbed/",
    ".venv/",
    ".hypothesis/",
    ".ruff_cache/",
    "requirements/",
    "headroom_kafka.egg-info/",
)


def test_the_artifact_holds_the_collection_and_no_development_tooling(tmp_path):
    subprocess.run(
        [GALAXY, "collection", "build", "--output-path", str(tmp_path), ROOT],
        check=True,
        capture_output=True,
        text=True,
    )
    (artifact,) = tmp_path.glob("headroom-kafka-*.tar.gz")
    with tarfile.open(artifact) as archive:
        names = [member.name for member in archive.getmembers()]
    assert {name.split("/")[0] for name in names} <= SHIPPED_TOP_LEVEL
    assert [name for name in names if name.startswith(KEPT_OUT) or name in ("mypy.ini", "ruff.toml")] == []
    for shipped in (
        "playbooks/site.yml",
        "roles/volume_gate/meta/argument_specs.yml",
        "meta/runtime.yml",
        "pyproject.toml",
        "packaging/headroom-guard/pyproject.toml",
        "requirements.txt",
        "headroom_guard/wheel.py",
        "docs/docsite/extra-docs.yml",
        "docs/docsite/rst/guide_alerts.rst",
    ):
        assert shipped in names
    tracked_plugins = subprocess.run(
        ["git", "ls-files", "plugins"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.split()
    assert set(tracked_plugins) <= set(names)
