"""Atomic file writes: a temp file in the target folder, then ``os.replace``.

A crash or a full disk never leaves a half-written file in place of the user's:

* the data goes to ``.<name>.<random>.<pid>.viz-place.tmp`` beside the target,
  is flushed and fsynced, then renamed over the target (and the folder is
  fsynced);
* a failed write removes its temp file; temp files of this tool left behind
  by a killed process (its pid is gone, or the file is over an hour old) are
  removed by the next write into that folder;
* an error names the target, never the temp file (an :class:`OSError` whose
  ``filename`` is the target);
* the written file gets the permissions a plain ``open(path, "w")`` would
  give: those of the file it replaces, else ``0o666`` minus the umask.

>>> import tempfile, os
>>> d = tempfile.mkdtemp(); p = os.path.join(d, "x.json")
>>> atomic_write_text(p, "{}"); open(p).read()
'{}'
>>> os.listdir(d)
['x.json']
"""
from __future__ import annotations

import json
import os
import stat
import tempfile
import time
from pathlib import Path
from typing import Any

#: Every temp file this module creates ends with this.
TEMP_SUFFIX = ".viz-place.tmp"
#: A temp file of a live process older than this (seconds) is stale too (pids are reused).
STALE_AFTER = 3600.0


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (see the module docstring)."""
    path = Path(path)
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temp_files(path.parent)
        mode = _mode_for(path)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=f".{os.getpid()}{TEMP_SUFFIX}", dir=path.parent)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
            os.fchmod(fh.fileno(), mode)
        os.replace(tmp, path)
        tmp = None
        _fsync_dir(path.parent)
    except OSError as err:
        raise _naming_target(err, path) from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=1, allow_nan=False) + "\n")


def remove_stale_temp_files(folder: str | os.PathLike) -> list[str]:
    """Remove this tool's temp files in ``folder`` whose writer is gone; returns their names.

    A temp file is this tool's when it matches ``.<name>.<random>.<pid>.viz-place.tmp``;
    it is stale when that pid no longer runs, or it is older than :data:`STALE_AFTER`.
    Other files are never touched.

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> _ = open(os.path.join(d, ".x.json.abc.999999999.viz-place.tmp"), "w")
    >>> remove_stale_temp_files(d), os.listdir(d)
    (['.x.json.abc.999999999.viz-place.tmp'], [])
    """
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        name = entry.name
        if not (name.startswith(".") and name.endswith(TEMP_SUFFIX)):
            continue
        pid_text = name[: -len(TEMP_SUFFIX)].rsplit(".", 1)[-1]
        if not pid_text.isdigit():
            continue
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
            old = now - entry.stat(follow_symlinks=False).st_mtime > STALE_AFTER
            if int(pid_text) == os.getpid() and not old:
                continue            # another thread of ours is writing it
            if old or not _pid_alive(int(pid_text)):
                os.unlink(entry.path)
                removed.append(name)
        except OSError:
            continue
    return removed


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return pid < 2**22          # exists but not ours (or an absurd pid: treat as gone)
    return True


def _current_umask() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)          # no /proc: read it by setting it (restored at once)
    os.umask(mask)
    return mask


def _mode_for(path: Path) -> int:
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return 0o666 & ~_current_umask()


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _naming_target(err: OSError, path: Path) -> OSError:
    """The same kind of OSError, naming ``path`` (not the temp file) with the reason."""
    reason = err.strerror or str(err)
    new = type(err)(err.errno, f"cannot write: {reason}", str(path)) if err.errno is not None \
        else OSError(f"{path}: cannot write: {reason}")
    return new
