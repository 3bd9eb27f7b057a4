"""What a run with ``--state DIR`` keeps for the next one, and whether the next one has anything to do.

The state is one file, DIR/current.json, replaced atomically after a run that finished: the fingerprint of the
settings the outputs depend on, the manifest of the input files (path, size, modification time), and a digest of the
summary.json the run wrote. A run whose fingerprint and manifest equal the state's, while its summary.json is still the
one recorded, has nothing new to read: it returns that summary without starting Spark and changes nothing. Any
difference is said (the reason) and the run is a full one. A lock on DIR/lock keeps two runs (an hourly timer and a
user) from working on the same state at once.
"""

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Optional

from headroom_pipeline import __version__
from headroom_pipeline.config import ConfigError

STATE_FILE = "current.json"
LOCK_FILE = "lock"
FORMAT = 1  # of current.json: a state of another format is not read, and the run is a full one
# Settings that change how the job runs, not what it writes.
NOT_IN_FINGERPRINT = frozenset({"master", "driver_memory", "progress", "spark_conf", "state"})
UNCHANGED, FULL = "unchanged", "full"


@dataclasses.dataclass(frozen=True)
class Decision:
    mode: str  # UNCHANGED or FULL
    reason: str

    def as_summary(self) -> dict[str, str]:
        return {"mode": self.mode, "reason": self.reason}


def fingerprint(settings: Mapping[str, Any], files: Iterable[str]) -> dict[str, Any]:
    """The settings the outputs depend on, as text, with the job's version and a digest of each file the settings name
    whose content matters (quotas, proposed quotas, a topic threshold plan)."""
    kept = {key: _text(value) for key, value in sorted(settings.items()) if key not in NOT_IN_FINGERPRINT}
    return {"version": __version__, "settings": kept, "files": {path: _digest(path) for path in sorted(files)}}


def manifest(inputs: Mapping[str, Iterable[str]]) -> dict[str, list[list[Any]]]:
    """{option: [[path, size, modification time in ns], ...]} of every input file, as listed now."""
    listed = {}
    for option, paths in sorted(inputs.items()):
        rows = []
        for path in sorted(os.path.abspath(path) for path in paths):
            stat = os.stat(path)
            rows.append([path, stat.st_size, stat.st_mtime_ns])
        listed[option] = rows
    return listed


def decide(
    previous: Optional[Mapping[str, Any]],
    current_fingerprint: Mapping[str, Any],
    current_manifest: Mapping[str, Any],
    summary_digest: Optional[str],
) -> Decision:
    """UNCHANGED when nothing the outputs depend on changed since the run ``previous`` records and its summary.json
    (``summary_digest``, None when missing) is still in DIR; otherwise FULL with the first difference found."""
    if previous is None:
        return Decision(FULL, "no state from an earlier run")
    if previous.get("format") != FORMAT:
        return Decision(FULL, f"the state is of another format ({previous.get('format')!r}, this job keeps {FORMAT})")
    before = previous.get("fingerprint") or {}
    if before.get("version") != current_fingerprint["version"]:
        return Decision(
            FULL, f"the state is of headroom_pipeline {before.get('version')}, this is {current_fingerprint['version']}"
        )
    changed = _changed_keys(before.get("settings") or {}, current_fingerprint["settings"])
    if changed:
        options = ", ".join("--" + key.replace("_", "-") for key in changed)
        return Decision(FULL, f"the state is of another configuration: {options} changed")
    changed = _changed_keys(before.get("files") or {}, current_fingerprint["files"])
    if changed:
        return Decision(FULL, f"the content of {', '.join(changed)} changed")
    difference = _manifest_difference(previous.get("manifest") or {}, current_manifest)
    if difference:
        return Decision(FULL, difference)
    if summary_digest is None:
        return Decision(FULL, "summary.json of the last run is missing from --out")
    if summary_digest != previous.get("summary"):
        return Decision(FULL, "summary.json in --out is not the one the last run wrote")
    return Decision(UNCHANGED, "no input file is new or changed since the last run")


def _changed_keys(before: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    return sorted(key for key in set(before) | set(now) if before.get(key) != now.get(key))


def _manifest_difference(before: Mapping[str, Any], now: Mapping[str, Any]) -> Optional[str]:
    """A sentence for the input files that are new, changed or gone; None when the listings are equal."""
    new = changed = gone = 0
    for option in set(before) | set(now):
        old_files = {row[0]: row[1:] for row in before.get(option, [])}
        new_files = {row[0]: row[1:] for row in now.get(option, [])}
        new += len(set(new_files) - set(old_files))
        gone += len(set(old_files) - set(new_files))
        changed += sum(1 for path in set(old_files) & set(new_files) if old_files[path] != new_files[path])
    parts = [f"{count} {what}" for count, what in ((new, "new"), (changed, "changed"), (gone, "gone")) if count]
    return f"input files since the last run: {', '.join(parts)}" if parts else None


def record(
    current_fingerprint: Mapping[str, Any], current_manifest: Mapping[str, Any], summary_digest: Optional[str]
) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "fingerprint": dict(current_fingerprint),
        "manifest": dict(current_manifest),
        "summary": summary_digest,
    }


# -- the state directory ----------------------------------------------------------------------------------------------
def load(directory: str) -> Optional[dict[str, Any]]:
    """The state DIR/current.json holds; None when there is none, or it cannot be read as one (a full run follows)."""
    try:
        with open(os.path.join(directory, STATE_FILE), encoding="utf-8") as handle:
            state = json.load(handle)
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def save(directory: str, state: Mapping[str, Any]) -> None:
    """Written beside, then renamed into place: a run killed while saving leaves the previous state."""
    path = os.path.join(directory, STATE_FILE)
    temporary = path + ".tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(state, handle, indent=1, sort_keys=True)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


@contextlib.contextmanager
def locked(directory: str) -> Iterator[None]:
    """DIR created when missing and locked for the run; ConfigError naming --state when another run holds it."""
    try:
        os.makedirs(directory, exist_ok=True)
        handle = open(os.path.join(directory, LOCK_FILE), "a", encoding="utf-8")  # noqa: SIM115  # held until the end
    except OSError as exc:
        raise ConfigError(f"--state: cannot use {directory!r}: {exc.strerror or exc}") from None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError(
                f"--state: another run is using {directory!r} (it holds {LOCK_FILE}); try later"
            ) from None
        yield


def file_digest(path: str) -> Optional[str]:
    """sha256 of a file's content; None when it does not exist."""
    try:
        return _digest(path)
    except FileNotFoundError:
        return None


def _digest(path: str) -> str:
    """sha256 of a small file: a quotas file, a plan, a summary."""
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def _text(value: Any) -> Any:
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value if isinstance(value, (str, int, float, bool, type(None))) else json.dumps(value, sort_keys=True)
