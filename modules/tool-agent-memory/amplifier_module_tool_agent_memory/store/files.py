"""Checks of an embedded store's files before the engine opens them, and file chores around it.

Qdrant Edge (0.9.0) answers most damaged files with an error, and some with a Rust panic that
reaches Python as ``pyo3_runtime.PanicException`` (a ``BaseException``; the store catches it).
One kind it cannot survive: a ``mutable_id_tracker.mappings`` entry with a huge internal id makes
it allocate for that id and abort the process ("memory allocation of 91703933256 bytes failed").
:func:`check_shard` reads that file first, as Edge would, and refuses the shard with an error.

Measured on a 243-memory shard, truncating to half / overwriting the first 256 bytes of each file
kind: JSON configs, ``version.info``, WAL and quantization metadata give errors; ``status.dat``
(truncated) and ``tracker.dat`` (overwritten) panic; truncated id-tracker files open *without
error* and lose half the points (the journal catches that: see :mod:`.journal`); overwritten
vectors open and search with altered vectors (``agent-memory repair --check`` finds it).
"""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import stat
import struct
from pathlib import Path

from ..errors import ConfigError, StoreDamagedError
from .child_build import build_folder
from .space import allocated, allocated_bytes

logger = logging.getLogger(__name__)

MAPPINGS = "mutable_id_tracker.mappings"
VERSIONS = "mutable_id_tracker.versions"
# Entry sizes of the mappings file (qdrant lib/segment/src/id_tracker/mutable_id_tracker/change.rs):
# a 1-byte type, then the external id (u64 or u128) and, for inserts, the internal id (u32).
_ENTRY_SIZE = {1: 1 + 8 + 4, 2: 1 + 16 + 4, 3: 1 + 8, 4: 1 + 16}
_INSERTS = {1: 9, 2: 17}  # type -> offset of the internal id
_U32 = struct.Struct("<I")


def refuse_links(path: Path, root: Path) -> None:
    """Raise when ``path`` or anything below it is a symbolic link (or ``path`` leaves ``root``)."""
    for part in _parts_below(path, root):
        if part.is_symlink():
            raise ConfigError(_link_message(part))
    if not path.exists() or not path.is_dir():
        return
    # A scan, not os.walk plus a Path and an lstat per entry: DirEntry.is_symlink() reads the type the directory
    # listing returned. Every open walks the store (at 100k memories ~1,900 entries: 0.57 s of the open, loaded),
    # and the entries grow with the segments (40 of them at a million memories).
    folders = [str(path)]
    while folders:
        try:
            scan = os.scandir(folders.pop())
        except OSError:
            continue  # gone meanwhile (a segment rewritten), or unreadable: os.walk skipped these too
        with scan:
            for entry in scan:
                if entry.is_symlink():
                    raise ConfigError(_link_message(Path(entry.path)))
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.path)


def _parts_below(path: Path, root: Path) -> list[Path]:
    try:
        rel = path.relative_to(root)
    except ValueError as exc:
        raise ConfigError(f"the store path {path} is outside the storage root {root}") from exc
    parts, current = [], root
    for name in rel.parts:
        current = current / name
        parts.append(current)
    return parts


def _link_message(path: Path) -> str:
    return (
        f"{path} is a symbolic link; agent-memory refuses links below the storage root (one could lead to "
        "another identity's store or place files outside the root). Replace it with the folder or file itself"
    )


# Windows' ``os`` has neither O_NOFOLLOW nor O_DIRECTORY, and opens files in text mode unless told O_BINARY:
# every open of a store file goes through these, so the store opens there too (links refused by lstat instead).
NO_FOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
BINARY: int = getattr(os, "O_BINARY", 0)
DIRECTORY: int | None = getattr(os, "O_DIRECTORY", None)


def open_no_follow(path: Path, flags: int, mode: int = 0o600) -> int:
    """``os.open`` that refuses a symbolic link with a clear error (in binary mode where that differs)."""
    if not NO_FOLLOW and os.path.islink(path):
        # No O_NOFOLLOW (Windows): checked just before opening instead of by the open itself.
        raise ConfigError(_link_message(path))
    try:
        return os.open(path, flags | NO_FOLLOW | BINARY, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ConfigError(_link_message(path)) from exc
        raise


def _damaged(path: Path, why: str, hint: str) -> StoreDamagedError:
    return StoreDamagedError(f"the store file {path} is damaged ({why}); {hint}")


def check_mappings(path: Path, hint: str) -> None:
    """Raise when an id-tracker mappings file holds an entry Edge could not load safely.

    Internal ids are assigned densely from 0, one per insert, so every internal id is below the
    number of inserts in the file; a larger one is damage (and the size Edge would allocate for it).
    A partial last entry is Edge's own crash recovery (it cuts it off) and is allowed.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return
    internal_ids: list[int] = []
    pos, end = 0, len(data)
    while pos < end:
        kind = data[pos]
        size = _ENTRY_SIZE.get(kind)
        if size is None:
            raise _damaged(path, f"unknown entry type {kind:#04x} at byte {pos}", hint)
        if pos + size > end:
            break
        if kind in _INSERTS:
            (internal,) = _U32.unpack_from(data, pos + _INSERTS[kind])
            internal_ids.append(internal)
        pos += size
    if internal_ids and max(internal_ids) >= len(internal_ids):
        raise _damaged(path, f"internal id {max(internal_ids)} with only {len(internal_ids)} inserts", hint)


def check_shard(shard: Path, hint: str) -> None:
    """Raise :class:`StoreDamagedError` for files of ``shard`` that would crash or mislead the engine."""
    config = shard / "edge_config.json"
    if config.exists():
        try:
            if not isinstance(json.loads(config.read_bytes()), dict):
                raise ValueError("not a JSON object")
        except (ValueError, UnicodeDecodeError) as exc:
            raise _damaged(config, f"not valid JSON: {exc}", hint) from exc
    segments = shard / "segments"
    if not segments.is_dir():
        return
    for segment in segments.iterdir():
        if not segment.is_dir() or not (segment / "version.info").exists():
            continue
        check_mappings(segment / MAPPINGS, hint)
        for status in segment.rglob("status.dat"):
            # A status file holds at least one u64; a shorter one panics the engine.
            if status.stat().st_size < 8:
                raise _damaged(status, f"{status.stat().st_size} bytes, at least 8 expected", hint)


def remove_interrupted_builds(shard: Path) -> int:
    """Delete what an interrupted index build left (temporary segments, segments never completed); bytes freed.

    Edge builds a new segment under ``temp_segments/`` and moves it into ``segments/`` when done;
    a segment without ``version.info`` was never completed, and Edge skips it at load.
    """
    freed = 0
    leftovers: list[Path] = []
    child = build_folder(shard)  # a child process's build that never got swapped in (see child_build)
    if child.is_dir():
        leftovers.append(child)
    temp = shard / "temp_segments"
    if temp.is_dir():
        leftovers.extend(temp.iterdir())
    segments = shard / "segments"
    if segments.is_dir():
        leftovers.extend(
            s
            for s in segments.iterdir()
            if s.is_dir() and (s.name.endswith(".deleted") or not (s / "version.info").exists())
        )
    for leftover in leftovers:
        size = _allocated(leftover)
        if leftover.is_dir() and not leftover.is_symlink():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.unlink(missing_ok=True)
        freed += size
        logger.warning("removed an interrupted index build", extra={"path": str(leftover), "bytes": size})
    return freed


def _allocated(path: Path) -> int:
    return allocated(path.stat()) if path.is_file() else allocated_bytes(path)


def sparse_copy_tree(src: Path, dst: Path, skip: frozenset[str] = frozenset()) -> int:
    """Copy a folder keeping sparse files sparse (only their data extents are read); bytes copied."""
    copied = 0
    dst.mkdir(parents=True, exist_ok=True)
    for entry in src.iterdir():
        if entry.name in skip:
            continue
        target = dst / entry.name
        mode = entry.lstat().st_mode
        if stat.S_ISDIR(mode):
            copied += sparse_copy_tree(entry, target)
        elif stat.S_ISREG(mode):
            copied += _sparse_copy(entry, target)
    return copied


def _sparse_copy(src: Path, dst: Path) -> int:
    copied = 0
    fin = os.open(src, os.O_RDONLY | NO_FOLLOW | BINARY)
    try:
        size = os.fstat(fin).st_size
        fout = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | BINARY, 0o600)
        try:
            pos = 0
            while pos < size:
                try:
                    start = os.lseek(fin, pos, os.SEEK_DATA)
                    stop = os.lseek(fin, start, os.SEEK_HOLE)
                except OSError as exc:
                    if exc.errno != errno.ENXIO:
                        raise
                    break
                os.lseek(fin, start, os.SEEK_SET)
                os.lseek(fout, start, os.SEEK_SET)
                remaining = stop - start
                while remaining > 0:
                    chunk = os.read(fin, min(remaining, 1 << 20))
                    if not chunk:
                        break
                    os.write(fout, chunk)
                    remaining -= len(chunk)
                    copied += len(chunk)
                pos = stop
            os.ftruncate(fout, size)
        finally:
            os.close(fout)
    finally:
        os.close(fin)
    return copied
