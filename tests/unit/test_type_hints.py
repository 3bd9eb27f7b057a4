"""Type hints on the collection's Python API, read with ast (nothing is imported).

Every public function and method of a package below annotates all its parameters and its return; mypy checks the
annotations against the bodies (``make lint``, configuration in mypy.ini). Public: a module-level function, or a method
of a module-level class (also when defined inside an ``if`` or ``try`` block), whose name and class name have no
leading underscore; dunder methods such as ``__init__`` count, ``self`` and ``cls`` need no annotation, and functions
nested in functions are not API.

The module_utils run on the managed nodes, Python 3.7 and later for ansible-core 2.17, and a signature's annotations
are evaluated when the module is imported: they may not use ``X | Y`` unions or subscripted builtins (``list[int]``),
and names ``typing`` gained after 3.7 (TypedDict, Literal, TypeGuard, ...) are imported under ``if TYPE_CHECKING:``
only, where type checkers read them and Python does not.
"""

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Packages whose public API must be fully annotated: the collection's module_utils, the pipeline (the control node's
# Python 3.11) and the guard (its host's Python, beside the module_utils).
ANNOTATED_PACKAGES = ["plugins/module_utils", "headroom_pipeline", "headroom_guard"]
# Packages whose annotations must evaluate on Python 3.7 (or be postponed, from __future__ import annotations).
PYTHON_37_PACKAGES = ["plugins/module_utils", "headroom_guard"]
# Subscripting these at runtime needs Python 3.9; the typing names that work on 3.7.
BUILTIN_GENERICS = {
    "list": "List",
    "dict": "Dict",
    "tuple": "Tuple",
    "set": "Set",
    "frozenset": "FrozenSet",
    "type": "Type",
}
# typing names that Python 3.7 lacks.
NEWER_TYPING_NAMES = {
    "Annotated",
    "Concatenate",
    "Final",
    "Literal",
    "LiteralString",
    "Never",
    "NotRequired",
    "ParamSpec",
    "Protocol",
    "ReadOnly",
    "Required",
    "Self",
    "SupportsIndex",
    "TypeAlias",
    "TypeAliasType",
    "TypeGuard",
    "TypeIs",
    "TypeVarTuple",
    "TypedDict",
    "Unpack",
    "assert_never",
    "assert_type",
    "final",
    "get_args",
    "get_origin",
    "is_typeddict",
    "override",
    "reveal_type",
    "runtime_checkable",
}


def _modules(package):
    """(path relative to the repository, parsed module) for every Python file of a package."""
    top = os.path.join(ROOT, package)
    for directory, _subdirectories, files in sorted(os.walk(top)):
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                with open(path, encoding="utf-8") as handle:
                    yield os.path.relpath(path, ROOT), ast.parse(handle.read(), path)


def _is_public(name, method):
    return not name.startswith("_") or (method and name.startswith("__") and name.endswith("__"))


def _blocks(node):
    """The statement lists inside a module-level if / try / with statement."""
    for field in ("body", "orelse", "finalbody"):
        yield getattr(node, field, [])
    for handler in getattr(node, "handlers", []):
        yield handler.body


def _public_functions(body, owner=None):
    """(qualified name, function node, is a method) of the public functions and methods defined in ``body``."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if _is_public(node.name, owner is not None):
                yield (owner + "." if owner else "") + node.name, node, owner is not None
        elif isinstance(node, ast.ClassDef):
            if _is_public(node.name, False):
                yield from _public_functions(node.body, (owner + "." if owner else "") + node.name)
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            for block in _blocks(node):
                yield from _public_functions(block, owner)


def _unannotated(function, method):
    """The parameters of a function without an annotation, and ``return`` when the return has none."""
    arguments = function.args
    positional = getattr(arguments, "posonlyargs", []) + arguments.args
    static = any(
        isinstance(decorator, ast.Name) and decorator.id == "staticmethod" for decorator in function.decorator_list
    )
    if method and not static and positional:
        positional = positional[1:]  # self or cls
    missing = [argument.arg for argument in positional + arguments.kwonlyargs if argument.annotation is None]
    missing += [
        "*" + argument.arg for argument in (arguments.vararg,) if argument is not None and argument.annotation is None
    ]
    missing += [
        "**" + argument.arg for argument in (arguments.kwarg,) if argument is not None and argument.annotation is None
    ]
    if function.returns is None:
        missing.append("return")
    return missing


@pytest.mark.parametrize("package", ANNOTATED_PACKAGES)
def test_every_public_function_annotates_its_parameters_and_return(package):
    problems, checked = [], 0
    for path, module in _modules(package):
        for name, function, method in _public_functions(module.body):
            checked += 1
            missing = _unannotated(function, method)
            if missing:
                problems.append(
                    "{0}:{1} {2}: no annotation for {3}".format(path, function.lineno, name, ", ".join(missing))
                )
    assert checked, "no public function found in {0}".format(package)
    assert not problems, "\n".join(problems)


def _is_type_checking(test):
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _evaluated(body, in_function=False):
    """The annotations Python evaluates and the ``from typing`` imports it runs, outside ``if TYPE_CHECKING:`` blocks.

    A signature's annotations are evaluated when the function is defined,
    a variable annotation only outside functions."""
    for node in body:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _evaluated(node.orelse, in_function)
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = node.args
            every = (
                getattr(arguments, "posonlyargs", [])
                + arguments.args
                + arguments.kwonlyargs
                + [arguments.vararg, arguments.kwarg]
            )
            yield from (
                argument.annotation for argument in every if argument is not None and argument.annotation is not None
            )
            if node.returns is not None:
                yield node.returns
            yield from _evaluated(node.body, True)
            continue
        if isinstance(node, ast.AnnAssign) and not in_function:
            yield node.annotation
        elif isinstance(node, ast.ImportFrom) and node.module == "typing":
            yield node
        for block in _blocks(node):
            yield from _evaluated(block, in_function)


def _python_37_problems(node):
    if isinstance(node, ast.ImportFrom):
        for alias in node.names:
            if alias.name in NEWER_TYPING_NAMES:
                yield (
                    "typing.{0} is not in Python 3.7: import it under if TYPE_CHECKING: "
                    "and quote the annotations using it"
                ).format(alias.name)
        return
    for part in ast.walk(node):
        if isinstance(part, ast.BinOp) and isinstance(part.op, ast.BitOr):
            yield "an X | Y union (use typing.Union or typing.Optional)"
        elif isinstance(part, ast.Subscript) and isinstance(part.value, ast.Name) and part.value.id in BUILTIN_GENERICS:
            yield "{0}[...] (use typing.{1})".format(part.value.id, BUILTIN_GENERICS[part.value.id])


def _annotations_postponed(module):
    return any(
        isinstance(node, ast.ImportFrom)
        and node.module == "__future__"
        and any(a.name == "annotations" for a in node.names)
        for node in module.body
    )


@pytest.mark.parametrize("package", PYTHON_37_PACKAGES)
def test_annotations_evaluate_on_python_3_7(package):
    problems = []
    for path, module in _modules(package):
        postponed = _annotations_postponed(module)  # from __future__ import annotations: kept as text, not evaluated
        for node in _evaluated(module.body):
            if postponed and not isinstance(node, ast.ImportFrom):
                continue
            problems.extend("{0}:{1}: {2}".format(path, node.lineno, problem) for problem in _python_37_problems(node))
    assert not problems, "\n".join(problems)
