"""The journal: an append-only, checksummed log of every accepted change of one collection.

It is the source of truth of an embedded store. The engine (Qdrant Edge, run without its own
write-ahead log) is a rebuildable index of it: every write is appended here *before* it reaches
the engine, the engine is flushed every :data:`CHECKPOINT_EVERY` writes and the journal records
the last sequence the engine holds (``checkpoint.json``), and opening replays whatever came after.
``agent-memory repair`` rebuilds a damaged engine from the journal; export falls back to it when
the engine cannot read a payload.

Layout of ``<identity>/journal/<collection>/``::

    00000001.jnl ...   segments of at most SEGMENT_BYTES, appended in order
    checkpoint.json    {"engine_seq": n}: the engine holds every change up to sequence n
    index.bin          the id -> record index as of some moment (see below); a cache, never the truth

A frame: ``MAGIC`` (2 bytes), body length (u32), CRC-32 of the body (u32), then the body:
meta length (u32), meta JSON (``seq``, ``op``, ``ids``, vector names and sizes), payload length
(u32), payload JSON, vectors (float32, little-endian, in the order the meta names them). A damaged
frame is skipped (the next one is found by its magic and CRC) and reported, never applied.

Opening does not read the whole journal: ``index.bin`` (written at checkpoints, at close and after a
purge) holds the index of live ids, the counts and each segment's identity (inode, size, mtime,
and a CRC-32 of segments written less than :data:`FRESH_NS` before it, whose mtime could hide a
change made in the same clock tick). Opening loads it, checks every segment against it, and reads
only what was appended after it (the tail of the segment that was active, and newer segments). A
segment changed in any other way (rewritten, damaged in place, cut, missing), or a damaged or
missing index, makes opening read every segment as before (checking every CRC), so a change to a
trusted segment is caught at open; bit rot that keeps a file's size and mtime is caught when the
record is read (every read checks its CRC) and by ``agent-memory repair`` (a full scan).

Forgetting (``purge``) rewrites the segments that hold a deleted point's records without them, so
no copy of its text stays in the journal; the delete record itself (ids only) stays.
"""

from __future__ import annotations

import json
import logging
import os
import struct
import sys
import time
import zlib
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .files import BINARY, DIRECTORY, NO_FOLLOW
from .space import allocated

if TYPE_CHECKING:
    from .live_index import LiveIndex

logger = logging.getLogger(__name__)

MAGIC = b"\xa7J"
_HEAD = struct.Struct("<2sII")
_U32 = struct.Struct("<I")
# Small segments keep a purge cheap (it rewrites the segments holding the forgotten point): 1 MiB holds
# ~270 memories. Measured with 1,000 memories: a forget took 68 ms with 4 MiB segments.
SEGMENT_BYTES = 1024 * 1024
# The engine is flushed (and the checkpoint advanced) after this many writes: a crash replays at most
# this many journal records on the next open. A flush of Edge measured 8-11 ms (300-point shard).
CHECKPOINT_EVERY = 200
CHECKPOINT = "checkpoint.json"
INDEX = "index.bin"
SUFFIX = ".jnl"
# A checkpoint writes the index again only after this many changes (at 100k memories writing it takes
# 70-120 ms; opening reads the changes after it: 2,000 memories are ~7.6 MB, ~40 ms), or when a purge
# rewrote segments (the index no longer matches them). Close always writes it.
INDEX_EVERY = 2000
_INDEX_MAGIC = b"\xa7X"
# Version 2 keeps the single-record UUIDs as three sorted arrays (live_index.py); version 1 files (every id in
# JSON) are still read.
_INDEX_VERSION = 2
_U64 = "<u8"
# A segment modified less than this before the index was written is also checked by its CRC at open: file
# times advance by clock ticks (4 ms at HZ=250), so a change in the same tick would keep the mtime.
FRESH_NS = 2_000_000_000

Op = Literal["upsert", "payload", "vector", "delete"]


@dataclass(frozen=True)
class Change:
    """One accepted change: ``upsert`` (payload + all vectors), ``payload`` (the full payload after
    the change), ``vector`` (one named vector) or ``delete`` (ids only)."""

    op: Op
    ids: tuple[str, ...]
    payload: dict[str, Any] | None = None
    vectors: dict[str, list[float]] | None = None


@dataclass(frozen=True)
class Entry:
    """A change read back from the journal, with its sequence number."""

    seq: int
    change: Change


@dataclass
class ScanReport:
    """What opening the journal found."""

    records: int = 0
    damaged: int = 0
    damaged_bytes: int = 0
    last_seq: int = 0
    # Whether opening read every segment (no usable index) or loaded the index and read the tail.
    full_scan: bool = True
    bytes_read: int = 0


def _encode(seq: int, change: Change) -> bytes:
    vectors = change.vectors or {}
    meta: dict[str, Any] = {"seq": seq, "op": change.op, "ids": list(change.ids)}
    if vectors:
        meta["vectors"] = [[name, len(vec)] for name, vec in vectors.items()]
    meta_bytes = json.dumps(meta, separators=(",", ":")).encode()
    payload_bytes = (
        b""
        if change.payload is None
        else json.dumps(change.payload, separators=(",", ":"), ensure_ascii=False).encode()
    )
    parts = [_U32.pack(len(meta_bytes)), meta_bytes, _U32.pack(len(payload_bytes)), payload_bytes]
    for vec in vectors.values():
        arr = array("f", vec)
        if sys.byteorder != "little":
            arr.byteswap()
        parts.append(arr.tobytes())
    body = b"".join(parts)
    return _HEAD.pack(MAGIC, len(body), zlib.crc32(body)) + body


def _meta(body: bytes | memoryview) -> tuple[dict[str, Any], int]:
    (meta_len,) = _U32.unpack_from(body, 0)
    meta: dict[str, Any] = json.loads(bytes(body[4 : 4 + meta_len]))
    return meta, 4 + meta_len


def _decode(body: bytes | memoryview) -> Entry:
    meta, pos = _meta(body)
    (payload_len,) = _U32.unpack_from(body, pos)
    pos += 4
    payload = json.loads(bytes(body[pos : pos + payload_len])) if payload_len else None
    pos += payload_len
    vectors: dict[str, list[float]] | None = None
    if meta.get("vectors"):
        vectors = {}
        for name, dim in meta["vectors"]:
            arr = array("f")
            arr.frombytes(bytes(body[pos : pos + 4 * dim]))
            if sys.byteorder != "little":
                arr.byteswap()
            vectors[str(name)] = arr.tolist()
            pos += 4 * dim
    change = Change(meta["op"], tuple(str(i) for i in meta["ids"]), payload, vectors)
    return Entry(int(meta["seq"]), change)


def _frames(data: bytes) -> Iterator[tuple[int, memoryview | None, int]]:
    """(offset, body or None when damaged, frame length) for every frame of a segment's bytes.

    After a damaged frame the next one is found by its magic and a matching CRC.
    """
    view = memoryview(data)
    pos, end = 0, len(data)
    while pos < end:
        if end - pos >= _HEAD.size:
            magic, length, crc = _HEAD.unpack_from(data, pos)
            start = pos + _HEAD.size
            if magic == MAGIC and start + length <= end and zlib.crc32(view[start : start + length]) == crc:
                yield pos, view[start : start + length], _HEAD.size + length
                pos = start + length
                continue
        nxt = data.find(MAGIC, pos + 1)
        while nxt != -1:
            if end - nxt >= _HEAD.size:
                _, length, crc = _HEAD.unpack_from(data, nxt)
                start = nxt + _HEAD.size
                if start + length <= end and zlib.crc32(view[start : start + length]) == crc:
                    break
            nxt = data.find(MAGIC, nxt + 1)
        stop = end if nxt == -1 else nxt
        yield pos, None, stop - pos
        pos = stop


def fsync_dir(folder: Path) -> None:
    """fsync a folder, so a file created or renamed in it survives a power loss (a no-op on Windows)."""
    if DIRECTORY is None:
        return  # Windows cannot open a folder to fsync it; its renames are not made durable this way
    try:
        fd = os.open(folder, os.O_RDONLY | DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@dataclass
class Journal:
    """The journal of one collection (see the module docstring). Not thread-safe: callers hold the collection lock."""

    folder: Path
    read_only: bool = False
    report: ScanReport = field(default_factory=ScanReport)
    engine_seq: int = 0
    # id -> where its records are: (segment number << 32) | offset, oldest first.
    _locs: LiveIndex = field(default_factory=lambda: _live_index())
    # Records of ids deleted since opening, kept until the purge that removes them.
    _dropped: dict[str, list[int]] = field(default_factory=dict)
    # The highest sequence number in each segment (entries() skips segments entirely before a sequence).
    _seg_last: dict[int, int] = field(default_factory=dict)
    _segments: list[int] = field(default_factory=list)
    _index_stale: bool = True
    # Segments were rewritten since the index was written: it no longer matches them.
    _index_invalid: bool = True
    _index_seq: int = 0
    _fd: int = -1
    _size: int = 0
    _seq: int = 0

    # Opening

    def open(self, full_scan: bool = False) -> ScanReport:
        """Load the index (or read every segment, checking each frame), read the tail after it and the checkpoint.

        ``full_scan``: read and check every segment whatever the index says (``agent-memory repair``).
        """
        if not self.read_only:
            self.folder.mkdir(parents=True, exist_ok=True)
        self._close_fd()
        self._segments = sorted(int(p.stem) for p in self._segment_paths())
        self._locs, self._dropped, self._seg_last = _live_index(), {}, {}
        report = ScanReport()
        tail = None if full_scan else self._load_index(report)
        if tail is None:
            self._locs, self._seg_last = _live_index(), {}
            report = ScanReport()
            tail = [(number, 0) for number in self._segments]
        else:
            report.full_scan = False
        for number, start in tail:
            self._index_segment(number, report, start)
        # An index that needed a tail (or none at all) is written again at the next checkpoint.
        self._index_stale = report.full_scan or bool(report.bytes_read)
        self._index_invalid = report.full_scan
        self._index_seq = 0 if report.full_scan else report.last_seq
        self.report = report
        self._seq = report.last_seq
        self.engine_seq = self._read_checkpoint()
        if report.damaged:
            logger.error(
                "journal has damaged records",
                extra={"journal": str(self.folder), "damaged": report.damaged, "bytes": report.damaged_bytes},
            )
        return report

    def _segment_paths(self) -> list[Path]:
        if not self.folder.is_dir():
            return []
        return [p for p in self.folder.iterdir() if p.suffix == SUFFIX and p.stem.isdigit()]

    def _path(self, number: int) -> Path:
        return self.folder / f"{number:08d}{SUFFIX}"

    def _index_segment(self, number: int, report: ScanReport, start: int = 0) -> None:
        with open(self._path(number), "rb") as fh:
            fh.seek(start)
            data = fh.read()
        report.bytes_read += len(data)
        for rel, body, length in _frames(data):
            offset = start + rel
            if body is None:
                report.damaged += 1
                report.damaged_bytes += length
                continue
            try:
                meta, _ = _meta(body)
                seq, op, ids = int(meta["seq"]), str(meta["op"]), [str(i) for i in meta["ids"]]
            except (ValueError, KeyError, TypeError, struct.error):
                report.damaged += 1
                report.damaged_bytes += length
                continue
            report.records += 1
            report.last_seq = max(report.last_seq, seq)
            self._seg_last[number] = max(self._seg_last.get(number, 0), seq)
            self._note(number, offset, op, ids)

    def _note(self, number: int, offset: int, op: str, ids: Sequence[str], live: bool = False) -> None:
        if op == "delete":
            for pid in ids:
                gone = self._locs.pop(pid)
                if live and gone:
                    # Where the deleted point's records are, for the purge that follows.
                    self._dropped.setdefault(pid, []).extend(gone)
            return
        loc = (number << 32) | offset
        for pid in ids:
            self._locs.add(pid, loc)

    # The persisted index

    def _segment_stamp(self, number: int, now_ns: int) -> list[int] | None:
        """[number, size, inode, mtime_ns, last seq, CRC of a fresh segment or -1]."""
        path = self._path(number)
        try:
            st = path.stat()
        except OSError:
            return None
        crc = -1
        if now_ns - st.st_mtime_ns < FRESH_NS:
            crc = zlib.crc32(path.read_bytes()[: st.st_size])
        return [number, st.st_size, st.st_ino, st.st_mtime_ns, self._seg_last.get(number, 0), crc]

    def write_index(self, force: bool = False) -> None:
        """Persist the index of live ids and the counts, with each segment's identity (no fsync: a torn index
        fails its CRC and opening reads every segment instead).

        Unless ``force``, only when segments were rewritten or :data:`INDEX_EVERY` changes were appended since.
        """
        if self.read_only or not self._index_stale:
            return
        if not (force or self._index_invalid or self._seq - self._index_seq >= INDEX_EVERY):
            return
        now_ns = time.time_ns()
        stamps = []
        for number in self._segments:
            stamp = self._segment_stamp(number, now_ns)
            if stamp is not None:
                stamps.append(stamp)
        report = self.report
        head = {
            "version": _INDEX_VERSION,
            "seq": self._seq,
            "records": report.records,
            "damaged": report.damaged,
            "damaged_bytes": report.damaged_bytes,
            "segments": stamps,
        }
        from .live_index import encode_rest

        high, low, locs, rest = self._locs.to_arrays()
        head["uuids"] = len(high)
        head_b = json.dumps(head, separators=(",", ":")).encode()
        rest_b = encode_rest(rest)
        body = b"".join(
            [
                _U32.pack(len(head_b)),
                head_b,
                _U32.pack(len(rest_b)),
                rest_b,
                high.astype(_U64, copy=False).tobytes(),
                low.astype(_U64, copy=False).tobytes(),
                locs.astype(_U64, copy=False).tobytes(),
            ]
        )
        tmp = self.folder / (INDEX + ".tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | NO_FOLLOW | BINARY, 0o600)
            try:
                os.write(fd, _HEAD.pack(_INDEX_MAGIC, len(body), zlib.crc32(body)) + body)
            finally:
                os.close(fd)
            os.replace(tmp, self.folder / INDEX)
        except OSError:
            # Only opening's speed depends on it.
            logger.warning("could not write the journal index", extra={"journal": str(self.folder)}, exc_info=True)
            return
        self._index_stale = self._index_invalid = False
        self._index_seq = self._seq

    def _load_index(self, report: ScanReport) -> list[tuple[int, int]] | None:
        """Load the persisted index when every segment matches it; the (segment, offset) ranges still to read."""
        try:
            data = (self.folder / INDEX).read_bytes()
        except OSError:
            return None
        try:
            magic, length, crc = _HEAD.unpack_from(data, 0)
            body = memoryview(data)[_HEAD.size :]
            if magic != _INDEX_MAGIC or len(body) != length or zlib.crc32(body) != crc:
                raise ValueError("damaged index")
            (head_len,) = _U32.unpack_from(body, 0)
            head = json.loads(bytes(body[4 : 4 + head_len]))
            pos = 4 + head_len
            (rest_len,) = _U32.unpack_from(body, pos)
            rest = bytes(body[pos + 4 : pos + 4 + rest_len])
            pos += 4 + rest_len
            version = head.get("version")
            if version == _INDEX_VERSION:
                live = _live_index_v2(int(head["uuids"]), rest, body[pos:])
            elif version == 1:
                live = _live_index_v1(rest, body[pos:])
            else:
                raise ValueError("unknown index version")
            stamps = [tuple(int(x) for x in stamp) for stamp in head["segments"]]
        except (ValueError, KeyError, TypeError, struct.error):
            logger.warning("journal index unusable: reading every segment", extra={"journal": str(self.folder)})
            return None
        tail = self._tail_after(stamps)
        if tail is None:
            return None
        self._locs = live
        self._seg_last = {number: last for number, _size, _ino, _mtime, last, _crc in stamps}
        report.records = int(head["records"])
        report.damaged = int(head["damaged"])
        report.damaged_bytes = int(head["damaged_bytes"])
        report.last_seq = int(head["seq"])
        return tail

    def _tail_after(self, stamps: list[tuple[int, ...]]) -> list[tuple[int, int]] | None:
        """What to read after the index: None when a segment it describes changed other than by appending."""
        known = {stamp[0] for stamp in stamps}
        last = max(known, default=0)
        if any(number not in known and number < last for number in self._segments):
            return None
        on_disk = set(self._segments)
        tail: list[tuple[int, int]] = []
        for number, size, ino, mtime, _last, crc in stamps:
            if number not in on_disk:
                return None
            path = self._path(number)
            try:
                st = path.stat()
            except OSError:
                return None
            grown = number == last and st.st_size > size
            if st.st_ino != ino or st.st_size < size or (st.st_size > size and not grown):
                return None
            if not grown and st.st_mtime_ns != mtime:
                return None
            if crc >= 0:
                with open(path, "rb") as fh:
                    if zlib.crc32(fh.read(size)) != crc:
                        return None
            if grown:
                tail.append((number, size))
        tail.extend((number, 0) for number in self._segments if number > last)
        return tail

    def _read_checkpoint(self) -> int:
        try:
            return int(json.loads((self.folder / CHECKPOINT).read_text())["engine_seq"])
        except (OSError, ValueError, KeyError, TypeError):
            return 0

    # State

    @property
    def last_seq(self) -> int:
        """The sequence number of the newest change."""
        return self._seq

    @property
    def live_count(self) -> int:
        """How many points the journal holds (written and not deleted)."""
        return len(self._locs)

    def live_ids(self) -> list[str]:
        """The ids of every point the journal holds, in the order of their oldest record."""
        return self._locs.ids()

    def has(self, point_id: str) -> bool:
        """Whether the journal holds this point."""
        return point_id in self._locs

    # Writing

    def append(self, changes: Sequence[Change]) -> tuple[int, int]:
        """Append changes (one write); returns a mark for :meth:`rollback`. Raises OSError (ENOSPC, EROFS)."""
        if self._fd < 0:
            self._open_active()
        mark = (self._segments[-1], self._size)
        frames, notes = [], []
        offset = self._size
        for change in changes:
            self._seq += 1
            frame = _encode(self._seq, change)
            frames.append(frame)
            notes.append((offset, change))
            offset += len(frame)
        data = b"".join(frames)
        try:
            written = os.write(self._fd, data)
            if written != len(data):
                raise OSError(28, "short write to the journal")
        except OSError:
            self._seq -= len(changes)
            self._truncate_active(mark[1])
            raise
        self._size += len(data)
        number = self._segments[-1]
        for off, change in notes:
            self._note(number, off, change.op, change.ids, live=True)
        self._seg_last[number] = self._seq
        self.report.records += len(changes)
        self._index_stale = True
        if self._size >= SEGMENT_BYTES:
            self._rotate()
        return mark

    def rollback(self, mark: tuple[int, int], count: int, changes: Sequence[Change]) -> None:
        """Undo the last :meth:`append` (the engine refused it): cut the segment back and forget its records."""
        number, size = mark
        if self._segments and self._segments[-1] != number:
            # The append rotated: drop the new empty segment first.
            self._close_fd()
            newest = self._segments.pop()
            self._path(newest).unlink(missing_ok=True)
            self._seg_last.pop(newest, None)
            self._open_active()
        self._truncate_active(size)
        self._seq -= count
        self.report.records -= count
        if any(change.op == "delete" for change in changes):
            # A delete dropped ids from the index: read it again from the (cut back) segments.
            dropped = self._dropped
            self.open()
            self._dropped = dropped
            return
        cut = (number << 32) | size
        for change in changes:
            for pid in change.ids:
                locs = self._locs.get(pid)
                if locs is None:
                    continue
                self._locs.replace(pid, [loc for loc in locs if loc < cut])

    def _open_active(self) -> None:
        if not self._segments:
            self._segments.append(1)
        path = self._path(self._segments[-1])
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | NO_FOLLOW | BINARY, 0o600)
        self._size = os.fstat(self._fd).st_size

    def _truncate_active(self, size: int) -> None:
        try:
            os.ftruncate(self._fd, size)
        except OSError:
            logger.exception("could not cut the journal back", extra={"journal": str(self.folder)})
        self._size = size

    def _rotate(self) -> None:
        self.sync()
        self._close_fd()
        self._segments.append(self._segments[-1] + 1)
        self._open_active()
        fsync_dir(self.folder)

    def _close_fd(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def sync(self) -> None:
        """fsync the active segment."""
        if self._fd >= 0:
            os.fsync(self._fd)

    def checkpoint(self, engine_seq: int | None = None) -> None:
        """Record that the engine holds every change up to ``engine_seq`` (default: the newest)."""
        seq = self._seq if engine_seq is None else engine_seq
        if self.read_only or seq == self.engine_seq:
            return
        self.sync()
        tmp = self.folder / (CHECKPOINT + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | NO_FOLLOW | BINARY, 0o600)
        try:
            os.write(fd, json.dumps({"engine_seq": seq}).encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.folder / CHECKPOINT)
        self.engine_seq = seq
        self.write_index()

    # Reading

    def _read_at(self, loc: int) -> Entry | None:
        number, offset = loc >> 32, loc & 0xFFFFFFFF
        try:
            with open(self._path(number), "rb") as fh:
                fh.seek(offset)
                head = fh.read(_HEAD.size)
                if len(head) < _HEAD.size:
                    return None
                magic, length, crc = _HEAD.unpack(head)
                body = fh.read(length)
        except OSError:
            return None
        if magic != MAGIC or len(body) != length or zlib.crc32(body) != crc:
            return None
        return _decode(body)

    def latest(self, point_id: str) -> tuple[dict[str, Any] | None, dict[str, list[float]]] | None:
        """A point's current payload and vectors as the journal has them, or None when it holds no such point."""
        locs = self._locs.get(point_id)
        if not locs:
            return None
        payload: dict[str, Any] | None = None
        vectors: dict[str, list[float]] = {}
        for loc in locs:
            entry = self._read_at(loc)
            if entry is None:
                continue
            change = entry.change
            if change.op == "upsert":
                payload, vectors = change.payload, dict(change.vectors or {})
            elif change.op == "payload":
                payload = change.payload
            elif change.op == "vector":
                vectors.update(change.vectors or {})
        return payload, vectors

    def entries(self, after_seq: int = 0) -> Iterator[Entry]:
        """Every readable change with a sequence number above ``after_seq``, oldest first."""
        for number in list(self._segments):
            if 0 < self._seg_last.get(number, 0) <= after_seq:
                # Every record of this segment is at or before after_seq (purges only remove records).
                continue
            try:
                data = self._path(number).read_bytes()
            except FileNotFoundError:
                continue
            for _offset, body, _length in _frames(data):
                if body is None:
                    continue
                try:
                    entry = _decode(body)
                except (ValueError, KeyError, TypeError, struct.error):
                    continue
                if entry.seq > after_seq:
                    yield entry

    # Forgetting

    def purge(self, point_ids: Sequence[str], compact: Sequence[str] = ()) -> int:
        """Rewrite the segments holding records of these (deleted) points without them; returns bytes removed.

        ``compact``: live points whose older records hold a payload they no longer have (a text that
        was replaced, e.g. a context window that quoted a forgotten memory): each is written again as
        one record of its current state, and its older records are dropped the same way.
        """
        gone = set(point_ids)
        obsolete: set[int] = set()
        fresh = []
        for pid in compact:
            locs = self._locs.get(pid)
            if pid in gone or locs is None:
                continue
            latest = self.latest(pid)
            if latest is None or latest[0] is None:
                continue
            obsolete.update(locs)
            fresh.append(Change("upsert", (pid,), latest[0], latest[1]))
        if fresh:
            self.append(fresh)
        touched = {loc >> 32 for loc in obsolete}
        for pid in gone:
            touched.update(loc >> 32 for loc in self._dropped.pop(pid, ()))
        numbers = sorted(n for n in touched if n in self._segments)
        removed = 0
        for number in numbers:
            removed += self._rewrite(number, gone, obsolete)
        return removed

    def _rewrite(self, number: int, gone: set[str], obsolete: set[int] | frozenset[int] = frozenset()) -> int:
        path = self._path(number)
        data = path.read_bytes()
        kept: list[bytes] = []
        # New offsets of the records kept, by id (one pass: the segment is parsed once).
        moved: dict[str, list[int]] = {}
        seen: set[str] = set()
        size = 0
        for offset, body, length in _frames(data):
            if body is None:
                continue
            meta, _ = _meta(body)
            ids = [str(i) for i in meta["ids"]]
            if meta["op"] != "delete":
                seen.update(ids)
                if gone.intersection(ids) or ((number << 32) | offset) in obsolete:
                    self.report.records -= 1
                    continue
                for pid in ids:
                    moved.setdefault(pid, []).append((number << 32) | size)
            kept.append(bytes(data[offset : offset + length]))
            size += length
        out = b"".join(kept)
        active = bool(self._segments) and number == self._segments[-1] and self._fd >= 0
        if active:
            self._close_fd()
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | NO_FOLLOW | BINARY, 0o600)
        try:
            os.write(fd, out)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        fsync_dir(self.folder)
        # Offsets in this segment moved: point the live ids at their new places.
        for pid in seen:
            locs = self._locs.get(pid)
            if locs is None:
                continue
            self._locs.replace(pid, sorted([loc for loc in locs if loc >> 32 != number] + moved.get(pid, [])))
        self._index_stale = self._index_invalid = True
        if active:
            self._open_active()
        return len(data) - len(out)

    def bytes_on_disk(self) -> int:
        """Allocated bytes of the journal's files."""
        total = 0
        for p in self._segment_paths():
            try:
                total += allocated(p.stat())  # st_blocks, which Windows' stat lacks, where there is one
            except OSError:
                continue
        return total

    def close(self) -> None:
        """fsync and close the active segment, then persist the index (the next open reads no segment)."""
        if self._fd >= 0:
            try:
                self.sync()
            finally:
                self._close_fd()
        self.write_index(force=True)


def _live_index() -> LiveIndex:
    # numpy (under the live index) is imported when a journal is first made, not when the package is: mounting
    # stays light.
    from .live_index import LiveIndex

    return LiveIndex()


def _live_index_v2(uuids: int, rest: bytes, arrays: memoryview) -> LiveIndex:
    """The live ids of an index file of version 2: the other ids' JSON, then high, low and loc arrays."""
    import numpy as np

    from .live_index import LiveIndex, decode_rest

    if len(arrays) != 3 * 8 * uuids:
        raise ValueError("inconsistent index")
    flat = np.frombuffer(arrays, dtype=_U64)
    return LiveIndex.from_arrays(flat[:uuids], flat[uuids : 2 * uuids], flat[2 * uuids :], decode_rest(rest))


def _live_index_v1(ids_json: bytes, arrays: memoryview) -> LiveIndex:
    """The live ids of an index file of version 1 (every id in JSON, then counts and locations)."""
    from .live_index import LiveIndex

    ids: list[str] = json.loads(ids_json)
    counts = array("I")
    counts.frombytes(bytes(arrays[: 4 * len(ids)]))
    locs = array("Q")
    locs.frombytes(bytes(arrays[4 * len(ids) :]))
    if sys.byteorder != "little":
        counts.byteswap()
        locs.byteswap()
    if len(counts) != len(ids) or sum(counts) != len(locs):
        raise ValueError("inconsistent index")
    pairs = []
    pos = 0
    for pid, n in zip(ids, counts, strict=True):
        pairs.append((pid, locs[pos : pos + n].tolist()))
        pos += n
    return LiveIndex.from_items(pairs)
