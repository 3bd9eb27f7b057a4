"""One run at a time: an exclusive lock on a file, held for a block, refused at once (never waited for) when another
run holds it. The state directory (run_state) and the output directory (publication) each have one."""

import contextlib
import fcntl
import os
from collections.abc import Iterator

from headroom_pipeline.config import ConfigError


@contextlib.contextmanager
def held(directory: str, lock_file: str, option: str, doing: str) -> Iterator[None]:
    """``directory``/``lock_file`` locked for the block (created when missing); ConfigError naming ``option`` when
    another run holds it (``doing``: what that run is doing to the directory, "using", "writing")."""
    path = os.path.join(directory, lock_file)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        handle = open(path, "a", encoding="utf-8")  # noqa: SIM115  # held until the end of the block
    except OSError as exc:
        raise ConfigError(f"{option}: cannot use {directory!r}: {exc.strerror or exc}") from None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError(
                f"{option}: another run is {doing} {directory!r} (it holds {lock_file}); try later"
            ) from None
        except OSError as exc:  # a file system without locks (some NFS mounts)
            raise ConfigError(f"{option}: cannot lock {lock_file} in {directory!r}: {exc.strerror or exc}") from None
        yield
