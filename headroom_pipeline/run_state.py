"""What a run with ``--state DIR`` keeps for the next one, and whether the next one has anything to do.

The state is one file, DIR/current.json (mode 0600), replaced atomically after a run that finished: a digest of each
setting the outputs depend on and of the files those settings name, the manifest of the input files (path, size,
modification and change times, inode), and the listing of what the run published in --out. A run whose fingerprint and
manifest equal the state's, while --out still holds exactly what the last run wrote, has nothing new to read: it
returns that run's summary without starting Spark and changes nothing. When the only difference is new snapshot files,
and the last run left a checkpoint to resume from (``resume``: incremental.py), the run is an incremental one that reads
only those files. Any other difference is said (the reason) and the run is a full one. A lock on DIR/lock keeps two
runs (an hourly timer and a user) from working on one state at once.
"""

import contextlib
import dataclasses
import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from typing import Any, Optional

from headroom_pipeline import __version__, publication, run_lock
from headroom_pipeline.sources import WHOLE, Tail

STATE_FILE = "current.json"
LOCK_FILE = "lock"
SUMMARY = "summary.json"  # the job's, written last
FORMAT = 4  # of current.json: a state of another format is not read, and the run is a full one
# Settings that change how the job runs, not what it writes. --conf stays in: a Spark setting can change the outputs
# (spark.sql.session.timeZone).
NOT_IN_FINGERPRINT = frozenset({"master", "driver_memory", "progress", "state"})
UNCHANGED, FULL, INCREMENTAL = "unchanged", "full", "incremental"
SNAPSHOTS = "--snapshots"  # the manifest's key of the one input an incremental run reads new files of
GUARD_DECISIONS = "--guard-decisions"  # the input every run reads whole

Listing = list[list[Any]]  # [[path, size, mtime ns, ctime ns, inode], ...]


@dataclasses.dataclass(frozen=True)
class Decision:
    mode: str  # UNCHANGED, FULL or INCREMENTAL
    reason: str
    # INCREMENTAL: {snapshot file: what of it to read}, the files new or appended to since the last run
    reads: Mapping[str, Tail] = dataclasses.field(default_factory=dict)

    def as_summary(self) -> dict[str, Any]:
        summary: dict[str, Any] = {"mode": self.mode, "reason": self.reason}
        if self.mode == INCREMENTAL:
            summary["files_read"] = len(self.reads)
        return summary


def fingerprint(settings: Mapping[str, Any], file_digests: Mapping[str, Optional[str]]) -> dict[str, Any]:
    """The job's version, a digest of each setting the outputs depend on (digests: a setting may hold a credential, and
    the state must not), and ``file_digests``: {path: digest} of the files the settings name whose content matters
    (quotas, proposed quotas, a threshold plan), taken before they are read (settings_file_digests)."""
    kept = {key: _value_digest(value) for key, value in sorted(settings.items()) if key not in NOT_IN_FINGERPRINT}
    return {"version": __version__, "settings": kept, "files": dict(sorted(file_digests.items()))}


def settings_file_digests(paths: Iterable[str]) -> dict[str, Optional[str]]:
    """{path: sha256, or None when missing}: taken before the job reads the files, so that an edit meanwhile is a
    change for the next run, never a state that claims content the outputs were not made from."""
    return {path: file_digest(path) for path in paths}


def manifest(inputs: Mapping[str, Iterable[str]]) -> dict[str, Listing]:
    """{option: listing} of every input file listed. A file gone since it was listed (the guard compressed its hour)
    is left out: the run reads its .gz, which the next run sees as new."""
    return {option: _listing(paths) for option, paths in sorted(inputs.items())}


def output_listing(out: str) -> Optional[Listing]:
    """What --out publishes: its symlinks, and every file of its current generation listed as the inputs are; None
    when it publishes no summary.json."""
    if not os.path.isfile(os.path.join(out, SUMMARY)):
        return None
    return [*publication.links(out), *_listing(publication.published_files(out))]


def decide(
    previous: Optional[Mapping[str, Any]],
    current_fingerprint: Mapping[str, Any],
    current_manifest: Mapping[str, Any],
    outputs: Optional[Listing],
) -> Decision:
    """UNCHANGED when nothing the outputs depend on changed since the run ``previous`` records and --out still holds
    what it wrote (``outputs``: output_listing); INCREMENTAL when only snapshot files are new or were appended to
    (incremental_reads) and the last run left a checkpoint; otherwise FULL with the first difference found."""
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
        options = ", ".join("--" + ("conf" if key == "spark_conf" else key.replace("_", "-")) for key in changed)
        return Decision(FULL, f"the state is of another configuration: {options} changed")
    changed = _changed_keys(before.get("files") or {}, current_fingerprint["files"])
    if changed:
        return Decision(FULL, f"the content of {', '.join(changed)} changed")
    if outputs is None:
        return Decision(FULL, "summary.json of the last run is missing from --out")
    if outputs != previous.get("outputs"):
        return Decision(FULL, "--out no longer holds exactly what the last run wrote")
    difference = _manifest_difference(previous.get("manifest") or {}, current_manifest)
    if difference is None:
        return Decision(UNCHANGED, "no input file is new or changed since the last run")
    resume = previous.get("resume")
    if not resume:
        return Decision(FULL, f"{difference}; {previous.get('no_resume') or 'the last run left no checkpoint'}")
    plan = incremental_reads(previous.get("manifest") or {}, current_manifest, resume.get("consumed") or {})
    if isinstance(plan, str):
        return Decision(FULL, f"{difference}; {plan}")
    return Decision(INCREMENTAL, difference, plan)


def incremental_reads(
    before: Mapping[str, Any], now: Mapping[str, Any], consumed: Mapping[str, Any]
) -> dict[str, Tail] | str:
    """{snapshot file: Tail} that an incremental run reads, or why none can. A run reads the snapshot files that are
    new, and the rest of the disk guard's files of the current hour that grew since (``consumed``: {file: [bytes,
    sha256]} of what was read of each) or were replaced by their .jsonl.gz; the guard's decision files, which are few,
    are read whole by every run; any other change to an input (a file rewritten, gone, a traffic file new) has a full
    run re-read everything."""
    reads: dict[str, Tail] = {}
    for option in sorted(set(before) | set(now)):
        old_files, new_files = _by_path(before, option), _by_path(now, option)
        if option == GUARD_DECISIONS:
            continue  # few: every run reads them whole
        if option != SNAPSHOTS:
            if old_files != new_files:
                return f"{option} files changed too (an incremental run reads new snapshots only)"
            continue
        for path, listing in new_files.items():
            if path not in old_files:
                plain = path[: -len(".gz")] if path.endswith(".gz") else ""
                reads[path] = Tail(*consumed[plain]) if plain in consumed else WHOLE
            elif listing != old_files[path]:
                if path not in consumed or listing[0] < consumed[path][0]:
                    return f"{path} changed, and not by a guard appending to it"
                reads[path] = Tail(*consumed[path])
        for path in set(old_files) - set(new_files):
            if path + ".gz" not in new_files:
                return f"{path} is gone"
    return reads


def record(
    current_fingerprint: Mapping[str, Any],
    current_manifest: Mapping[str, Any],
    outputs: Optional[Listing],
    resume: Optional[Mapping[str, Any]] = None,
    no_resume: Optional[str] = None,
) -> dict[str, Any]:
    """The state after a run that finished. ``resume``: what an incremental run resumes from (incremental.py), or
    None with ``no_resume``, why the next run with new files cannot resume (it runs in full, and says so)."""
    return {
        "format": FORMAT,
        "fingerprint": dict(current_fingerprint),
        "manifest": dict(current_manifest),
        "outputs": outputs,
        "resume": dict(resume) if resume else None,
        "no_resume": None if resume else (no_resume or "the last run left no checkpoint"),
    }


def _changed_keys(before: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    return sorted(key for key in set(before) | set(now) if before.get(key) != now.get(key))


def _manifest_difference(before: Mapping[str, Any], now: Mapping[str, Any]) -> Optional[str]:
    """A sentence for the input files that are new, changed or gone; None when the listings are equal."""
    new = changed = gone = 0
    for option in set(before) | set(now):
        old_files, new_files = _by_path(before, option), _by_path(now, option)
        new += len(set(new_files) - set(old_files))
        gone += len(set(old_files) - set(new_files))
        changed += sum(1 for path in set(old_files) & set(new_files) if old_files[path] != new_files[path])
    parts = [f"{count} {what}" for count, what in ((new, "new"), (changed, "changed"), (gone, "gone")) if count]
    return f"input files since the last run: {', '.join(parts)}" if parts else None


def _by_path(manifest: Mapping[str, Any], option: str) -> dict[str, list[Any]]:
    """{path: [size, mtime, ctime, inode]} of an option's files in a manifest."""
    return {row[0]: row[1:] for row in manifest.get(option, [])}


def _listing(paths: Iterable[str]) -> Listing:
    rows = []
    for path in sorted(os.path.abspath(path) for path in paths):
        try:
            stat = os.stat(path)
        except FileNotFoundError:
            continue
        rows.append([path, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino])
    return rows


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
    """Written beside (mode 0600), then renamed into place: a run killed while saving leaves the previous state."""
    path = os.path.join(directory, STATE_FILE)
    temporary = path + ".tmp"
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with open(descriptor, "w", encoding="utf-8") as handle:
        json.dump(state, handle, indent=1, sort_keys=True)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def locked(directory: str) -> contextlib.AbstractContextManager[None]:
    """DIR created when missing and locked for the run; ConfigError naming --state when another run holds it."""
    return run_lock.held(directory, LOCK_FILE, "--state", "using")


def file_digest(path: str) -> Optional[str]:
    """sha256 of a small file's content (a quotas file, a plan); None when it does not exist."""
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except FileNotFoundError:
        return None


def _value_digest(value: Any) -> str:
    text = value.isoformat() if hasattr(value, "isoformat") else json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
