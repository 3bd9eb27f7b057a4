"""Every module of the pipeline and of the guard imports on its own, and the project's modules import one another
without a cycle: not at the top of a module, and not inside a function either (a late import that closes a cycle
still makes one). Only the command line imports the job; the report reads the stage registry, never the job.

Both import the collection's module_utils by their own name (ansible_collections.headroom.kafka.plugins.module_utils)
as the installed headroom-kafka package provides them (make venv installs this checkout editable): no PYTHONPATH, no
import shim. The guard never imports the pipeline (its host has only the guard's wheel)."""

import ast
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGES = ("headroom_pipeline", "headroom_guard")
JOB = "headroom_pipeline.job"
IMPORTS_JOB = {"headroom_pipeline.cli"}  # the entry point (__main__.py reaches the job through it)


def module_files():
    """{module name: file} of every module of PACKAGES; a package is its __init__.py."""
    modules = {}
    for package in PACKAGES:
        directory = os.path.join(ROOT, package)
        for name in sorted(os.listdir(directory)):
            if name.endswith(".py"):
                module = package if name == "__init__.py" else f"{package}.{name[:-3]}"
                modules[module] = os.path.join(directory, name)
    return modules


MODULES = module_files()


def imported_modules(module, path):
    """The project's modules that ``module`` imports anywhere in its file, inside functions too."""
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), path)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)  # from a package import a module
    return {name for name in found if name in MODULES and name != module}


GRAPH = {module: imported_modules(module, path) for module, path in MODULES.items()}


def test_every_module_is_found():
    assert {
        "headroom_pipeline.job",
        "headroom_pipeline.stage_registry",
        "headroom_pipeline.report",
        "headroom_guard.guard",
    } <= set(MODULES)
    assert GRAPH["headroom_pipeline.cli"] >= {JOB}, "the import graph sees imports inside functions"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_the_module_imports_on_its_own_and_starts_no_jvm(module):
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    code = (
        f"import sys\nimport {module}\n"
        "spark = sys.modules.get('pyspark')\n"
        "assert spark is None or spark.SparkContext._gateway is None, 'importing started a JVM'\n"
    )
    if module.startswith("headroom_guard"):
        code += "assert not [m for m in sys.modules if m.startswith('headroom_pipeline')], 'imported the pipeline'\n"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]


def test_no_import_cycle():
    state = {}  # module -> "open" while its imports are followed, "done" after

    def visit(module, path):
        state[module] = "open"
        for target in sorted(GRAPH[module]):
            if state.get(target) == "open":
                cycle = path[path.index(target) :] + [target]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target, path + [target])
        state[module] = "done"

    for module in sorted(GRAPH):
        if module not in state:
            visit(module, [module])


def test_only_the_command_line_imports_the_job():
    assert {module for module, targets in GRAPH.items() if JOB in targets} == IMPORTS_JOB
