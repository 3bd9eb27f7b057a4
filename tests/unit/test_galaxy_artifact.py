"""The Galaxy artifact holds the collection and what its roles run, and none of the development tooling: the Kafka
test cluster package, the benchmarks, build outputs and caches stay out (galaxy.yml's build_ignore). What Galaxy and
the README say the collection does is what its modules and roles deliver."""

import os
import re
import subprocess
import sys
import tarfile

import yaml
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GALAXY = os.path.join(os.path.dirname(sys.executable), "ansible-galaxy")
SHIPPED_TOP_LEVEL = {
    "FILES.json",
    "MANIFEST.json",
    "LICENSE",
    "README.md",
    "CHANGELOG.rst",  # the release notes antsibull-changelog writes (Galaxy and the docsite show them)
    "changelogs",
    "dashboards",  # the Grafana dashboard (JSON for file provisioning) and its generator
    "docs",  # the guides (docs/docsite), which the README links to and the collection docsite renders
    "extensions",
    "headroom_guard",  # the disk_guard role builds the guard's wheel from it and packaging/headroom-guard
    "packaging",
    "pyproject.toml",  # the package headroom-kafka: the pipeline and the guard, pip-installable from the collection
    "requirements.txt",  # the collection's Python requirements, which ansible-builder reads
    "bindep.txt",  # the collection's system packages, which ansible-builder reads
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
# Each claim galaxy.yml's description makes, and the modules and roles that deliver it. A claim added to the
# description must be added here with what delivers it; a claim nothing in the collection delivers has no place there.
DESCRIPTION_CLAIMS = {
    "read every log dir's free space": ("plugins/modules/log_dirs_info.py",),
    "throttle producers as volumes fill (the Strimzi quota plugin or a disk guard service)": (
        "plugins/modules/volume_limits.py",
        "roles/quota_plugin",
        "plugins/modules/disk_guard.py",
        "roles/disk_guard",
    ),
    "manage client quotas": ("plugins/modules/client_quota.py", "plugins/modules/client_quota_info.py"),
    "alert at the storage limits": ("roles/prometheus_rules",),
}


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
        "playbooks/relieve.yml",
        "roles/volume_gate/meta/argument_specs.yml",
        "meta/runtime.yml",
        "pyproject.toml",
        "packaging/headroom-guard/pyproject.toml",
        "requirements.txt",
        "bindep.txt",
        "meta/execution-environment.yml",
        "headroom_guard/wheel.py",
        "docs/docsite/extra-docs.yml",
        "docs/docsite/rst/guide_alerts.rst",
    ):
        assert shipped in names
    tracked_plugins = subprocess.run(
        ["git", "ls-files", "plugins"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.split()
    assert set(tracked_plugins) <= set(names)


def description_claims(description):
    """The claims after the description's colon: split at the commas outside parentheses, without the last "and"."""
    listed = description.split(": ", 1)[1]
    return [claim for claim in re.split(r",\s+(?:and\s+)?(?![^()]*\))", listed.rstrip(".")) if claim]


def test_every_claim_of_the_galaxy_description_is_delivered_by_a_module_or_role():
    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as handle:
        description = yaml.safe_load(handle)["description"]
    assert description.startswith("Keep self-managed Apache Kafka clusters from running out of disk: ")
    assert description_claims(description) == list(DESCRIPTION_CLAIMS)
    for claim, delivered_by in DESCRIPTION_CLAIMS.items():
        missing = [path for path in delivered_by if not os.path.exists(os.path.join(ROOT, path))]
        assert missing == [], f"{claim!r}: {missing} do not exist"


def readme_table(heading):
    """The first column of the table under README.md's ``## heading``, without its backquotes."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as handle:
        section = handle.read().split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return [row.split("|")[1].strip().strip("`") for row in section.splitlines() if row.startswith("| `")]


def test_the_readme_lists_every_module_and_role_there_is_and_no_other():
    modules = sorted(name[:-3] for name in os.listdir(os.path.join(ROOT, "plugins", "modules")) if name.endswith(".py"))
    assert sorted(readme_table("Modules")) == [f"headroom.kafka.{name}" for name in modules]
    roles = sorted(name for name in os.listdir(os.path.join(ROOT, "roles")) if not name.startswith("."))
    assert sorted(readme_table("Roles and `playbooks/site.yml`")) == roles


def test_the_execution_environment_gets_the_collections_needs_and_keeps_its_own_ansible_core():
    """ansible-builder installs what meta/execution-environment.yml names; an ansible-core or ansible in the Python
    requirements would replace the execution environment's own."""
    with open(os.path.join(ROOT, "meta", "execution-environment.yml"), encoding="utf-8") as handle:
        dependencies = yaml.safe_load(handle)["dependencies"]
    assert set(dependencies) == {"python", "system"}
    for listed in dependencies.values():
        assert os.path.isfile(os.path.join(ROOT, listed)), listed
    with open(os.path.join(ROOT, dependencies["python"]), encoding="utf-8") as handle:
        lines = [line.split("#", 1)[0].strip() for line in handle]
    names = [Requirement(line).name.lower() for line in lines if line]
    assert [name for name in names if name in ("ansible", "ansible-core", "ansible-base")] == []


def test_the_guides_execution_environment_definitions_install_this_collection_on_a_tested_ansible_core():
    """The example definitions of docs/docsite/rst/guide_install.rst: ansible-builder 3's format, this collection from
    Galaxy, and ansible-core releases requirements/ansible-core.txt says the collection is tested on: the first
    allows every one of them, the Debian one those its Python 3.11 runs."""
    with open(os.path.join(ROOT, "docs", "docsite", "rst", "guide_install.rst"), encoding="utf-8") as handle:
        text = handle.read()
    blocks = re.findall(r"\.\. code-block:: yaml\n\n((?:   .*\n|\n)+)", text)
    assert len(blocks) == 2, "the RPM-based example and the Debian one"
    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as handle:
        galaxy = yaml.safe_load(handle)
    with open(os.path.join(ROOT, "requirements", "ansible-core.txt"), encoding="utf-8") as handle:
        (tested,) = [Requirement(line.strip()) for line in handle if line.strip() and not line.startswith("#")]
    releases = ["2.{0}.0".format(minor) for minor in range(15, 25)]
    allowed = []
    for block in blocks:
        definition = yaml.safe_load("\n".join(line[3:] for line in block.splitlines()))
        assert definition["version"] == 3 and definition["images"]["base_image"]["name"]
        (collection,) = definition["dependencies"]["galaxy"]["collections"]
        assert collection["name"] == "{namespace}.{name}".format(**galaxy)
        wanted = Requirement(definition["dependencies"]["ansible_core"]["package_pip"])
        assert wanted.name == tested.name
        allowed.append([release for release in releases if release in wanted.specifier])
    assert allowed[0] == [release for release in releases if release in tested.specifier]
    assert allowed[1] and set(allowed[1]) <= set(allowed[0])
    assert Version(max(allowed[1], key=Version)) < Version("2.20"), (
        "bookworm's Python 3.11 runs ansible-core 2.19 at most"
    )
