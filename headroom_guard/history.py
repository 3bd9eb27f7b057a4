"""The guard's history directory: JSON-lines files of one UTC hour each, appended as the guard decides, compressed
when their hour is over and removed after the retention (the layout and the plan are guard_history's).

Written so that a reader (the pipeline) can read the directory at any moment: a line is appended in one write and
flushed, a compressed file appears under its name only when complete (written beside it, then renamed), and a guard
killed in the middle of a line leaves one broken line that the next append starts after, never glued to it.
"""

from __future__ import annotations

import gzip
import os
import shutil
from collections.abc import Iterable
from typing import IO

from ansible_collections.headroom.kafka.plugins.module_utils import guard_history


class HistoryError(OSError):
    """The history could not be written; the guard says so, counts it and goes on deciding."""


class HistoryWriter:
    """Appends records to the hour files of ``directory`` (created when missing); ``retention``: seconds after the
    end of its hour that a file is kept."""

    def __init__(self, directory: str, retention: float) -> None:
        self.directory, self.retention = directory, retention
        self.open_files: dict[str, tuple[str, IO[str]]] = {}  # kind: (hour, file)
        os.makedirs(directory, mode=0o750, exist_ok=True)

    def append(self, kind: str, lines: Iterable[str], at: float) -> None:
        """Append ``lines`` (JSON texts, without newlines) to the ``kind`` file of the hour of ``at`` (epoch
        seconds); a new hour closes the previous file and tidies the directory first."""
        text = "".join(line + "\n" for line in lines)
        if not text:
            return
        hour = guard_history.hour_of(at)
        try:
            handle = self._file(kind, hour, at)
            handle.write(text)
            handle.flush()
        except OSError as exc:
            self._close(kind)  # opened again, after its broken line, at the next append
            raise HistoryError(
                exc.errno, f"cannot write the {kind} history in {self.directory!r}: {exc.strerror}"
            ) from exc

    def tidy(self, now: float) -> list[str]:
        """Compress the files of hours that are over and remove the expired ones; returns what was done, a line each."""
        done = []
        plan = guard_history.housekeeping(os.listdir(self.directory), now, self.retention)
        for name in plan["remove"]:
            os.remove(os.path.join(self.directory, name))
            done.append(f"removed {name}")
        for name in plan["compress"]:
            self._compress(name)
            done.append(f"compressed {name}")
        return done

    def close(self) -> None:
        for kind in list(self.open_files):
            self._close(kind)

    def _file(self, kind: str, hour: str, at: float) -> IO[str]:
        current = self.open_files.get(kind)
        if current and current[0] == hour:
            return current[1]
        self._close(kind)
        if current:  # the hour turned: close and compress the last one (and anything a stopped guard left)
            self.tidy(at)
        path = os.path.join(self.directory, guard_history.file_name(kind, hour))
        broken = _ends_inside_a_line(path)
        handle = open(path, "a", encoding="utf-8")  # pylint: disable=consider-using-with  # kept open for the hour
        if broken:
            handle.write("\n")  # a guard killed mid-write: its broken line ends here, the next record is whole
        self.open_files[kind] = (hour, handle)
        return handle

    def _close(self, kind: str) -> None:
        current = self.open_files.pop(kind, None)
        if current:
            try:
                current[1].close()
            except OSError:
                pass

    def _compress(self, name: str) -> None:
        path = os.path.join(self.directory, name)
        partial = os.path.join(self.directory, "." + name + ".gz.partial")  # hidden: readers skip it
        with gzip.open(partial, "wb") as target:
            # An hour compressed already (the clock was set back into it): its records first, none lost.
            if os.path.exists(path + ".gz"):
                with gzip.open(path + ".gz", "rb") as earlier:
                    shutil.copyfileobj(earlier, target)
            with open(path, "rb") as source:
                shutil.copyfileobj(source, target)
        os.replace(partial, path + ".gz")
        os.remove(path)


def _ends_inside_a_line(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            if handle.seek(0, os.SEEK_END) == 0:
                return False
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) != b"\n"
    except FileNotFoundError:
        return False
