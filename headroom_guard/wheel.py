"""The guard's wheelhouse, built on the control node: ``python -m headroom_guard.wheel --out DIR``.

DIR receives the guard's wheel, ``headroom_guard-<version>+<digest>-py3-none-any.whl``, and the wheels it needs
(kafka-python and prometheus-client, both pure Python); the disk_guard role copies them onto the guard's host and
installs them into a virtual environment with
``pip install --no-index``, so that host needs Python 3 and nothing else: no Ansible, no network.

What the wheel holds is staged in a directory laid out as the collection and built there by setuptools from the
guard's own project file, packaging/headroom-guard/pyproject.toml, staged as pyproject.toml (it maps
plugins/module_utils to its import name, ``ansible_collections.headroom.kafka.plugins.module_utils``; the collection
root's pyproject.toml is the larger headroom-kafka package, pipeline included, for control nodes):

- headroom_guard's modules, but this builder;
- the collection's module_utils the guard imports, found by following its imports (at the top of a module, inside
  functions and under ``if TYPE_CHECKING:`` alike) from headroom_guard through the module_utils themselves; the
  others (the quota plugin's rules, the pipeline's) stay out;
- the guard's project file, and LICENSE, which setuptools puts in the wheel's metadata.

The version's local label is a digest of those files and of this builder's FORMAT, so the wheel's name says what it
holds: an unchanged source finds its wheel in DIR and builds nothing; a change builds a new one, which pip on the
host sees as a new version. setuptools writes the entries with one fixed date (SOURCE_DATE_EPOCH), so the same
sources make the same bytes.

kafka-python and prometheus-client come from ``pip download`` (the control node's pip settings apply: PIP_INDEX_URL,
pip.conf) with their sha256 verified; a wheel already in DIR is verified, not fetched again (on a control node
without an index, put it there). Wheels of DIR not used for PRUNE_DAYS days are removed; a lock on DIR serialises
concurrent runs.

Prints one JSON line: {"wheelhouse", "headroom_guard": {"wheel", "version", "digest"}, "kafka_python": {"wheel",
"version"}, "prometheus_client": {"wheel", "version"}, "built", "downloaded"}. Exit status 1 with the reason on
stderr when something cannot be built or fetched. Needs setuptools 70.1 or later (or 61 and the wheel package)
and pip in the Python that runs it.
"""

from __future__ import annotations

import argparse
import ast
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from typing import Any, Dict, List, Optional

# Bump when the staging below changes what a wheel holds for the same sources.
FORMAT = "1"
NAME = "headroom_guard"
MODULE_UTILS = "ansible_collections.headroom.kafka.plugins.module_utils"
MODULE_UTILS_DIR = os.path.join("plugins", "module_utils")
GUARD_PROJECT = os.path.join("packaging", "headroom-guard", "pyproject.toml")
PROJECT_FILES = (GUARD_PROJECT, "LICENSE")
# Where a file is staged when not at its own relative path: setuptools reads the project file at the staging root.
STAGED_AS = {GUARD_PROJECT: "pyproject.toml"}
# The builder itself is the control node's; the guard's host never runs it.
NOT_SHIPPED = ("wheel.py",)
KAFKA_PYTHON_VERSION = "3.0.12"
KAFKA_PYTHON_SHA256 = "67add72052e3ad0c37ed9963ebe2b1696adc7f063c64eaf19862c21b69a64a18"
# 0.21 is the last release for Python 3.8, which the guard's hosts may have (packaging/headroom-guard).
PROMETHEUS_CLIENT_VERSION = "0.21.1"
PROMETHEUS_CLIENT_SHA256 = "594b45c410d6f4f8888940fe80b5cc2521b305a1fafe1c58609ef715a001f301"
# The wheels the guard needs beside its own, by project: (its key in the output, default version, that one's sha256).
DEPENDENCIES = {
    "kafka-python": ("kafka_python", KAFKA_PYTHON_VERSION, KAFKA_PYTHON_SHA256),
    "prometheus-client": ("prometheus_client", PROMETHEUS_CLIENT_VERSION, PROMETHEUS_CLIENT_SHA256),
}
# 1980-01-01T00:00:00Z, the earliest date a zip entry can carry.
SOURCE_DATE_EPOCH = "315532800"
PRUNE_DAYS = 30
DIGEST_LENGTH = 12
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_VERSION = re.compile(r"^[0-9][A-Za-z0-9.+!-]*$")
# Runs in the staging directory with the Python that builds: setuptools' PEP 517 hooks. Exit 3: no setuptools; 4:
# setuptools wants a package to build wheels that is not installed (wheel, before setuptools 70.1).
_BUILD_HOOK = """\
import importlib.util, sys
out, answer = sys.argv[1], sys.argv[2]  # read first: setuptools' hooks rewrite sys.argv
try:
    from setuptools import build_meta
except ImportError:
    sys.exit(3)
missing = [name for name in build_meta.get_requires_for_build_wheel() if importlib.util.find_spec(name) is None]
with open(answer, "w", encoding="utf-8") as handle:
    if missing:
        handle.write(" and ".join(missing))
        sys.exit(4)
    handle.write(build_meta.build_wheel(out))
"""


class BuildError(Exception):
    """Why the wheelhouse cannot be made; the message says what to do."""


def collection_root() -> str:
    """The collection whose guard is built: the directory holding this package."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _imported_module_utils(path: str) -> set[str]:
    """The module_utils a Python file imports, anywhere in it (``import X.m``, ``from X import m``, ``from X.m import
    name``, with X the module_utils package)."""
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), path)
    found: set[str] = set()
    prefix = MODULE_UTILS + "."
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found.update(name[len(prefix) :].split(".")[0] for name in names if name.startswith(prefix))
    return found


def guard_modules(root: str) -> list[str]:
    """headroom_guard's Python files that ship, relative to ``root``."""
    directory = os.path.join(root, NAME)
    return sorted(
        os.path.join(NAME, name) for name in os.listdir(directory) if name.endswith(".py") and name not in NOT_SHIPPED
    )


def needed_module_utils(root: str) -> list[str]:
    """The module_utils files the guard imports, directly or through one another, relative to ``root``."""
    pending = set()
    for relative in guard_modules(root):
        pending |= _imported_module_utils(os.path.join(root, relative))
    needed: set[str] = set()
    while pending:
        module = pending.pop()
        if module in needed:
            continue
        path = os.path.join(root, MODULE_UTILS_DIR, module + ".py")
        if not os.path.isfile(path):
            raise BuildError(f"the guard imports {MODULE_UTILS}.{module}, but {path} does not exist")
        needed.add(module)
        pending |= _imported_module_utils(path) - needed
    return sorted(os.path.join(MODULE_UTILS_DIR, module + ".py") for module in needed)


def shipped_files(root: str) -> list[str]:
    """Every file staged for the wheel, relative to ``root``."""
    return sorted(guard_modules(root) + needed_module_utils(root) + list(PROJECT_FILES))


def source_digest(root: str, files: Iterable[str]) -> str:
    """A digest of the files (names and bytes) and of the builder's FORMAT."""
    digest = hashlib.sha256(f"format {FORMAT}\n".encode())
    for relative in sorted(files):
        with open(os.path.join(root, relative), "rb") as handle:
            content = handle.read()
        digest.update(f"{relative}\0{len(content)}\0".encode())
        digest.update(content)
    return digest.hexdigest()[:DIGEST_LENGTH]


def source_version(root: str) -> str:
    """headroom_guard.__version__, read without importing the package."""
    path = os.path.join(root, NAME, "__init__.py")
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), path)
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and [getattr(target, "id", None) for target in node.targets] == ["__version__"]
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            return node.value.value
    raise BuildError(f"{path} sets no __version__ string")


def wheel_name(version: str) -> str:
    return f"{NAME}-{version}-py3-none-any.whl"


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _tail(text: str, lines: int = 20) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def build_wheel(root: str, out: str, files: Sequence[str], version: str, python: str = sys.executable) -> str:
    """Stage ``files`` of ``root`` and build the wheel of ``version`` into ``out``; returns its file name."""
    staging = tempfile.mkdtemp(prefix=".staging-", dir=out)
    try:
        for relative in files:
            target = os.path.join(staging, STAGED_AS.get(relative, relative))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copyfile(os.path.join(root, relative), target)
            os.chmod(target, 0o644)  # whatever the checkout's umask: the wheel records each file's mode
        base, _plus, label = version.partition("+")
        if label:
            # setuptools adds the local label to the version headroom_guard.__version__ gives (its project file).
            with open(os.path.join(staging, "setup.cfg"), "w", encoding="utf-8") as handle:
                handle.write(f"[egg_info]\ntag_build = +{label}\n")
        built = os.path.join(staging, "dist")
        answer = os.path.join(staging, "wheel-name")
        env = dict(os.environ, SOURCE_DATE_EPOCH=SOURCE_DATE_EPOCH, PYTHONDONTWRITEBYTECODE="1")
        result = subprocess.run(
            [python, "-c", _BUILD_HOOK, built, answer],
            cwd=staging,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode == 3:
            raise BuildError(
                f"building the guard's wheel needs setuptools (70.1 or later) in {python}: "
                f"{python} -m pip install 'setuptools>=70.1'"
            )
        if result.returncode in (0, 4):
            with open(answer, encoding="utf-8") as handle:
                name = handle.read().strip()  # the wheel's name, or what setuptools lacks to build one
        if result.returncode == 4:
            raise BuildError(
                f"building the guard's wheel needs {name} beside the setuptools of {python}: "
                f"{python} -m pip install 'setuptools>=70.1' (or {name})"
            )
        if result.returncode != 0:
            raise BuildError(f"setuptools could not build the guard's wheel of {base}:\n" + _tail(result.stderr))
        if name != wheel_name(version):
            raise BuildError(f"setuptools built {name}, expected {wheel_name(version)}")
        os.replace(os.path.join(built, name), os.path.join(out, name))  # complete or absent, never half written
        return name
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def pinned_wheel(out: str, project: str, version: str, sha256: str, python: str = sys.executable) -> tuple[str, bool]:
    """(file name, downloaded) of the wheel of ``project`` ``version`` in ``out``: one found there with ``sha256``, or
    one pip downloads (and verifies)."""
    prefix = f"{project.replace('-', '_')}-{version}-"
    for name in sorted(os.listdir(out)):
        if name.startswith(prefix) and name.endswith(".whl") and _sha256(os.path.join(out, name)) == sha256:
            return name, False
    download = tempfile.mkdtemp(prefix=".download-", dir=out)
    try:
        requirements = os.path.join(download, "requirements.txt")
        with open(requirements, "w", encoding="utf-8") as handle:
            handle.write(f"{project}=={version} --hash=sha256:{sha256}\n")
        result = subprocess.run(
            [
                python,
                "-m",
                "pip",
                "download",
                "--disable-pip-version-check",
                "--no-deps",
                "--only-binary=:all:",
                "--require-hashes",
                "--dest",
                os.path.join(download, "wheels"),
                "-r",
                requirements,
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise BuildError(
                f"{project} {version} (sha256 {sha256}) could not be downloaded with {python} -m pip (its index "
                f"settings apply: PIP_INDEX_URL, pip.conf; or put the wheel, {prefix}py3-none-any.whl, into {out}):\n"
                + _tail(result.stdout + result.stderr)
            )
        (name,) = os.listdir(os.path.join(download, "wheels"))
        os.replace(os.path.join(download, "wheels", name), os.path.join(out, name))
        return name, True
    finally:
        shutil.rmtree(download, ignore_errors=True)


def _check_pin(project: str, version: str, sha256: str) -> None:
    option = "--" + project
    if not _VERSION.match(version):
        raise BuildError(f"{option} must be a version such as {DEPENDENCIES[project][1]} (got {version!r})")
    if not _SHA256.match(sha256):
        raise BuildError(
            f"{option}-sha256 must be the sha256 of the {project} {version} wheel, 64 lowercase hex digits "
            f"(got {sha256!r})"
        )


def _prune(out: str, keep: Iterable[str], days: float = PRUNE_DAYS) -> None:
    """Remove the wheels of ``out`` not used for ``days`` (other versions; another checkout may still use one)."""
    now = time.time()
    kept = set(keep)
    for name in kept:
        os.utime(os.path.join(out, name))  # used now
    for name in os.listdir(out):
        path = os.path.join(out, name)
        if name.endswith(".whl") and name not in kept and now - os.path.getmtime(path) > days * 86400:
            os.unlink(path)


def wheelhouse(
    out: str,
    root: Optional[str] = None,
    pins: Optional[Dict[str, tuple[str, str]]] = None,
    python: str = sys.executable,
) -> Dict[str, Any]:
    """Make ``out`` hold the guard's wheel of the sources of ``root`` and the wheels of DEPENDENCIES, each at the
    (version, sha256) ``pins`` gives by project or at its default; what it holds."""
    chosen = {
        project: (pins or {}).get(project, (default, sha256))
        for project, (_key, default, sha256) in DEPENDENCIES.items()
    }
    for project, (version, sha256) in chosen.items():
        _check_pin(project, version, sha256)
    root, out = root or collection_root(), os.path.abspath(out)  # setuptools runs elsewhere: no relative paths
    files = shipped_files(root)
    digest = source_digest(root, files)
    version = f"{source_version(root)}+{digest}"
    lock_path = os.path.join(out, ".lock")
    try:
        os.makedirs(out, exist_ok=True)
        with open(lock_path, "a", encoding="utf-8"):
            pass
    except OSError as exc:
        raise BuildError(f"--out {out!r}: cannot write there: {exc.strerror or exc}") from None
    result: Dict[str, Any] = {"wheelhouse": out, "downloaded": False}
    with open(lock_path, "a", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another run building into the same directory waits here
        guard = wheel_name(version)
        result["built"] = not os.path.exists(os.path.join(out, guard))
        if result["built"]:
            build_wheel(root, out, files, version, python)
        used = [guard]
        for project, (pinned, sha256) in chosen.items():
            name, downloaded = pinned_wheel(out, project, pinned, sha256, python)
            result[DEPENDENCIES[project][0]] = {"wheel": name, "version": pinned}
            result["downloaded"] = result["downloaded"] or downloaded
            used.append(name)
        _prune(out, used)
    result["headroom_guard"] = {"wheel": guard, "version": version, "digest": digest}
    return result


def main(argv: Optional[List[str]] = None) -> int:
    command = argparse.ArgumentParser(
        prog="python -m headroom_guard.wheel",
        description="Build the guard's wheel (rebuilt only when its sources change) and fetch the wheels it needs "
        "(kafka-python, prometheus-client) into one directory, for pip install --no-index on the guard's host.",
    )
    command.add_argument("--out", required=True, metavar="DIR", help="the wheelhouse (created when missing)")
    for project, (_key, default, _sha256) in DEPENDENCIES.items():
        command.add_argument(
            "--" + project,
            default=default,
            metavar="VERSION",
            help=f"the {project} release to fetch (default {default}, within the guard's range)",
        )
        command.add_argument(
            f"--{project}-sha256",
            metavar="HEX",
            help=f"the sha256 of its wheel (required with another --{project}; {default}'s is built in)",
        )
    args = vars(command.parse_args(argv))
    pins = {}
    for project, (key, default, default_sha256) in DEPENDENCIES.items():
        version, sha256 = args[key], args[key + "_sha256"]
        if sha256 is None:
            if version != default:
                command.error(f"--{project} {version} needs --{project}-sha256 (the sha256 of its wheel)")
            sha256 = default_sha256
        pins[project] = (version, sha256)
    try:
        result = wheelhouse(args["out"], pins=pins)
    except BuildError as exc:
        print(f"headroom_guard.wheel: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
