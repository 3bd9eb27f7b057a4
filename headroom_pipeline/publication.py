"""Outputs published whole: a reader of DIR sees the last finished run's outputs or the new run's, never a mix.

Each run writes into a generation of its own, DIR/.generations/NNNNNN/, and publishes it by replacing one symlink,
DIR/current, with a rename (atomic on POSIX file systems). Every output a user reads, DIR/summary.json, DIR/decisions
and the others, is a symlink into DIR/current, so the one rename switches all of them at once:

    DIR/current        -> .generations/000012
    DIR/decisions      -> current/decisions
    DIR/summary.json   -> current/summary.json

A run holds DIR/.generations/lock from its start to its publication, so two runs never write one DIR at once. A run
killed before the rename leaves the outputs as the last finished run left them, and its generation, which the next
run that writes removes. The generation that a rename replaces stays until the next run begins, so that a reader who
resolved DIR/current an instant before the rename can finish: while a run writes, DIR holds two generations. A reader
that must see one run's outputs across several reads resolves DIR/current once (os.path.realpath) and reads below it.

Only what is the job's is replaced or removed: the symlinks it made, and real files and directories of the layout
before generations that that run's summary.json says it wrote (they are replaced by their symlinks at the first
publication, removed just before it: that one switch is not atomic). Anything else of an output's name in DIR is
refused before a run starts, and other files in DIR are left alone.
"""

import contextlib
import os
import re
import shutil
from collections.abc import Collection, Iterable
from typing import Any, Optional

from headroom_pipeline import run_lock
from headroom_pipeline.config import ConfigError

GENERATIONS = ".generations"
CURRENT = "current"
LOCK = "lock"  # in GENERATIONS
_DIGITS = 6  # at least; the number grows past them
_GENERATION_TARGET = re.compile(re.escape(GENERATIONS) + r"/([0-9]+)")


class Generation:
    """One run's outputs, written below ``path`` until publish() makes them DIR's."""

    def __init__(self, out: str, number: int) -> None:
        self.out, self.number = out, number
        self.name = f"{number:0{_DIGITS}d}"
        self.path = os.path.join(out, GENERATIONS, self.name)
        self.warnings: list[str] = []  # generations that could not be removed (a reader holds them open on NFS)

    def output(self, name: str) -> str:
        return os.path.join(self.path, name)


def check(out: str, outputs: Collection[str], earlier_layout: Collection[str]) -> None:
    """ConfigError, before anything is written, for what in DIR publishing would replace that is not the job's: a
    ``current`` that is not its symlink, or a file or directory of an output's name (``outputs``: those the run
    writes) that is not a symlink of the job's nor of the earlier layout (``earlier_layout``: outputs that layout's
    summary.json says the job wrote)."""
    path = os.path.join(out, CURRENT)
    if os.path.lexists(path) and _generation_of(path) is None:
        raise ConfigError(
            f"--out: {path!r} is not the job's: the job publishes its outputs through a symlink of that name to "
            f"{GENERATIONS}/NUMBER; move it, or give another --out"
        )
    for name in outputs:
        path = os.path.join(out, name)
        if os.path.islink(path):
            if os.readlink(path) != os.path.join(CURRENT, name):
                raise ConfigError(f"--out: {path!r} is a symlink the job did not make; move it, or give another --out")
        elif os.path.lexists(path) and name not in earlier_layout:
            raise ConfigError(
                f"--out: {path!r} is not the job's (no summary.json in --out says the job wrote it), and the run would "
                "replace it with its own output; move it, or give another --out"
            )


def locked(out: str) -> contextlib.AbstractContextManager[None]:
    """DIR/.generations/lock held while a run writes DIR; ConfigError naming --out when another run holds it."""
    return run_lock.held(out, os.path.join(GENERATIONS, LOCK), "--out", "writing")


def begin(out: str) -> Generation:
    """A new, empty generation in DIR, whose lock (locked) the caller holds. The generations that are not DIR's
    current one go first: the one published before it (its readers had a whole run's time) and any of a run that did
    not finish. One that cannot be removed stays, said in the generation's warnings."""
    generations = os.path.join(out, GENERATIONS)
    os.makedirs(generations, exist_ok=True)
    _check_symlinks(out)
    current = _generation_of(os.path.join(out, CURRENT))
    numbers = _numbers(generations)
    warnings = []
    for name, number in numbers.items():
        if number != current:
            try:
                shutil.rmtree(os.path.join(generations, name))
            except OSError as exc:
                warnings.append(
                    f"--out: cannot remove the earlier generation {name} yet ({exc.strerror or exc}; a reader may "
                    "hold it open): the next run tries again"
                )
    generation = Generation(out, max(numbers.values(), default=0) + 1)
    os.makedirs(generation.path)
    generation.warnings = warnings
    return generation


def publish(generation: Generation, outputs: Iterable[str], earlier_layout: Iterable[str] = ()) -> None:
    """Make ``generation`` DIR's current one. ``outputs``: every output a run can write, in the order their symlinks
    are made; those the generation holds get theirs first (one new to DIR points into the old generation, where it is
    missing, until the switch), the others lose theirs after it, and ``earlier_layout`` (those that a run of the
    earlier layout wrote as real directories) are removed first when this run did not write them."""
    out = generation.out
    outputs = list(outputs)
    written = [name for name in outputs if os.path.lexists(generation.output(name))]
    not_written = [name for name in outputs if name not in written]
    for name in set(earlier_layout) & set(not_written):
        path = os.path.join(out, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
    for name in written:
        _link(out, name, os.path.join(CURRENT, name))
    _link(out, CURRENT, os.path.join(GENERATIONS, generation.name))  # the switch
    for name in not_written:
        path = os.path.join(out, name)
        if os.path.islink(path) and os.readlink(path) == os.path.join(CURRENT, name):
            os.remove(path)


def published_files(out: str) -> list[str]:
    """The files a reader of DIR finds through its symlinks: those of the current generation, by their paths below
    DIR/current (empty before the first publication)."""
    top = os.path.join(out, CURRENT)
    if not os.path.isdir(top):
        return []
    return [os.path.join(root, name) for root, unused_dirs, files in os.walk(top) for name in files]


def links(out: str) -> list[list[Any]]:
    """[name, target] of every symlink in DIR: a listing of what DIR publishes, with published_files."""
    try:
        entries = sorted(os.scandir(out), key=lambda entry: entry.name)
    except OSError:
        return []
    return [[entry.name, os.readlink(entry.path)] for entry in entries if entry.is_symlink()]


def _link(out, name, target):
    """DIR/name -> target by a rename over whatever was there (a real directory of the earlier layout goes first)."""
    path = os.path.join(out, name)
    if os.path.islink(path) and os.readlink(path) == target:
        return
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    temporary = os.path.join(out, f".{name}.link")
    if os.path.lexists(temporary):
        os.remove(temporary)
    os.symlink(target, temporary)
    os.replace(temporary, path)


def _check_symlinks(out):
    """ConfigError before Spark starts when DIR's file system cannot hold the symlinks the job publishes through."""
    probe = os.path.join(out, GENERATIONS, ".symlink-probe")
    try:
        if os.path.lexists(probe):
            os.remove(probe)
        os.symlink(CURRENT, probe)
        os.replace(probe, probe + ".renamed")
        os.remove(probe + ".renamed")
    except OSError as exc:
        raise ConfigError(
            f"--out: the file system of {out!r} cannot hold the symlinks the job publishes its outputs through "
            f"({exc.strerror or exc}); give a --out on a POSIX file system"
        ) from None


def _generation_of(path: str) -> Optional[int]:
    """The number of the generation the symlink ``path`` points to; None when it is not such a symlink."""
    try:
        match = _GENERATION_TARGET.fullmatch(os.readlink(path))
    except OSError:
        return None
    return int(match.group(1)) if match else None


def _numbers(generations):
    return {name: int(name) for name in os.listdir(generations) if name.isdigit()}
