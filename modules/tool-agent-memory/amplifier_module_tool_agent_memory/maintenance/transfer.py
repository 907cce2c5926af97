"""Moving an identity's memories out of a store and into one: export and import as JSON lines.

The CLI only calls these and prints; they log, never print.

An import reads its file twice and never holds its records: the first pass validates every
line and keeps, per record, only where it is in the file (offset, length, checksum), its id
and its write order; one bad line and nothing is written. The second pass reads the records
back in write order, ``batch`` at a time, and writes them (embedding those without vectors).
Standard input is spooled to an unnamed temporary file first, so it can be read twice too.

Lines: a memory is a :class:`MemoryRecord` as JSON. ``export --with-vectors`` adds
``"vectors": {"model": <model id>, "dense": <base64>, "ctx": <base64>}`` (little-endian
float32), which an import into a store of the same model writes as they are. A line of another
kind of record names it in ``"record"`` (:data:`KINDS`: ``"plan"``, written after the memories and
embedded on import; a line without one is a memory).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import os
import sys
import tempfile
import zlib
from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ValidationError

from ..errors import InvalidInput, ModelMismatchError, StoreDamagedError
from ..validation import MAX_DEPTH, describe_validation_error, input_rule_error, json_shape_problem

if TYPE_CHECKING:
    import numpy as np

    from ..embeddings.providers import Embedder
    from ..memory.models import MemoryRecord
    from ..memory.service import MemoryService
    from ..plans.service import PlanService
    from ..store.contract import Store

logger = logging.getLogger(__name__)

MAX_IMPORT_ERRORS_SHOWN = 10
RECORD = "record"
VECTORS = "vectors"
MEMORY = "memory"
PLAN = "plan"
# Records written per batch (and embedded per call): what an import holds at once.
DEFAULT_BATCH = 256

Advance = Callable[[int], None]
Vector = list[float]
# Writes a checked file's memories another way when it can (checked, the memory writer, use_vectors, batch,
# advance); how many records that wrote (0: none, the import writes them itself).
MemoriesFirst = Callable[["CheckedImport", "KindWriter", bool, int, "Advance | None"], int]


class ImportFileError(InvalidInput):
    """An import file that cannot be read, or has invalid lines: nothing was imported."""

    kind = "invalid_import"


# ---------------------------------------------------------------------------------------
# Kinds of records


@dataclass(frozen=True)
class RecordKind:
    """One kind of record a file can carry: how a line of it is validated, keyed and ordered."""

    name: str
    model: Callable[[], type[BaseModel]]
    # The names of the vectors a record of this kind carries (the collection's vector names; none: never).
    vector_names: tuple[str, ...]
    # Position in the write order among records of this kind (memories: oldest first).
    order_key: Callable[[Any], int]
    # The id the record is stored under (a later line with the same one replaces it).
    id_of: Callable[[Any], str]
    # Whether the ``record`` field is part of the kind's model (else it is taken off the line).
    keeps_record_field: bool = False


@cache  # looked up for every line: the import machinery costs ~60 us a call
def _memory_model() -> type[BaseModel]:
    from ..memory.models import MemoryRecord

    return MemoryRecord


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _micros(record: Any) -> int:
    stamp: datetime = record.created_at
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return (stamp - _EPOCH) // timedelta(microseconds=1)


@cache
def _plan_model() -> type[BaseModel]:
    from ..plans.models import PlanExportRecord

    return PlanExportRecord


def _plan_id(record: Any) -> str:
    from ..plans.service import plan_id_for

    return plan_id_for(record.prompt)


# Kinds by the value of a line's "record" (a memory line has none). Order: the order kinds are written in.
KINDS: dict[str, RecordKind] = {
    MEMORY: RecordKind(MEMORY, _memory_model, ("dense", "ctx"), _micros, lambda record: str(record.id)),
    PLAN: RecordKind(PLAN, _plan_model, (), lambda _record: 0, _plan_id, keeps_record_field=True),
}


class KindWriter(Protocol):
    """Writes the records of one kind into a store, batch after batch."""

    def write(self, records: Sequence[Any], vectors: Sequence[tuple[Vector, ...] | None] | None = None) -> None:
        """Write one batch; ``vectors[i]`` are record i's own vectors (or None: embed it)."""
        ...

    def finish(self) -> dict[str, Any]:
        """After the last batch (index builds); a summary."""
        ...

    def close(self) -> None:
        """After a failure: release what the writer holds (nothing more is written)."""
        ...


@dataclass(frozen=True)
class Line:
    """One validated line: its record, and its vectors and their model when it carries them."""

    kind: RecordKind
    record: Any
    vectors: tuple[Vector, ...] | None = None
    model: str | None = None


def _decode_vector(text: Any, name: str, as_list: bool) -> Any:
    import numpy as np

    if not isinstance(text, str):
        raise ValueError(f"vectors.{name} must be base64 text")
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"vectors.{name} is not base64 ({exc})") from exc
    if not raw or len(raw) % 4:
        raise ValueError(f"vectors.{name} is not a list of float32 ({len(raw)} bytes)")
    vec = np.frombuffer(raw, dtype="<f4")
    if not np.isfinite(vec).all():
        raise ValueError(f"vectors.{name} holds a number that is not finite")
    return vec.tolist() if as_list else vec


def _parse_vectors(kind: RecordKind, block: Any, as_lists: bool) -> tuple[str, tuple[Any, ...]]:
    if not kind.vector_names:
        raise ValueError(f"a {kind.name} line carries no vectors (its text is embedded on import)")
    if not isinstance(block, dict):
        raise ValueError("vectors must be an object {model, " + ", ".join(kind.vector_names) + "}")
    unknown = set(block) - {"model", *kind.vector_names}
    missing = [name for name in ("model", *kind.vector_names) if name not in block]
    if unknown or missing:
        raise ValueError(
            f"vectors must hold exactly model, {', '.join(kind.vector_names)}"
            + (f" (missing {', '.join(missing)})" if missing else "")
            + (f" (unknown {', '.join(sorted(unknown))})" if unknown else "")
        )
    model = block["model"]
    if not isinstance(model, str) or not model:
        raise ValueError("vectors.model must be the id of the model that made them")
    vectors = tuple(_decode_vector(block[name], name, as_lists) for name in kind.vector_names)
    if len({len(v) for v in vectors}) != 1:
        raise ValueError("the vectors of a record must have one size")
    return model, vectors


def parse_line(text: str, as_lists: bool = True) -> Line:
    """Validate one non-blank line; raises ValueError with what is wrong (no line number).

    ``as_lists``: the vectors as lists of floats (what a store writes), else as numpy arrays (checking only).
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg} at column {exc.colno})") from exc
    except RecursionError as exc:
        raise ValueError(f"nests deeper than {MAX_DEPTH} levels") from exc
    if not isinstance(data, dict):
        raise ValueError(f"must be a JSON object, got {type(data).__name__}")
    type_name = data.get(RECORD, MEMORY)
    kind = KINDS.get(type_name) if isinstance(type_name, str) else None
    if kind is None:
        raise ValueError(f"unknown record {type_name!r} (known: {', '.join(KINDS)})")
    if not kind.keeps_record_field:
        data.pop(RECORD, None)
    block = data.pop(VECTORS, None)
    problem = json_shape_problem(data)
    if problem is not None:
        raise ValueError(describe_validation_error(input_rule_error("record", *problem)))
    try:
        record = kind.model().model_validate(data)
    except ValidationError as exc:
        raise ValueError(describe_validation_error(exc)) from exc
    if block is None:
        return Line(kind, record)
    model, vectors = _parse_vectors(kind, block, as_lists)
    return Line(kind, record, vectors, model)


def _id_halves(record_id: str) -> tuple[int, int]:
    import uuid

    value = uuid.UUID(record_id).int
    return value >> 64, value & 0xFFFF_FFFF_FFFF_FFFF


# ---------------------------------------------------------------------------------------
# Import: the validation pass, then the write pass


@dataclass(frozen=True)
class Places:
    """Where the records to write are in a checked file, in write order: byte offset, length and CRC-32 of
    each line, and the file's size and modification time when it was checked. Picklable: an import's child
    process reads its records from them (maintenance/import_pipeline.py)."""

    source: str
    stat: tuple[int, int]
    offsets: np.ndarray[Any, Any] = field(repr=False)
    lengths: np.ndarray[Any, Any] = field(repr=False)
    crcs: np.ndarray[Any, Any] = field(repr=False)

    def head(self, count: int) -> Places:
        """The first ``count`` records."""
        return Places(self.source, self.stat, self.offsets[:count], self.lengths[:count], self.crcs[:count])

    def batches(self, fd: int, size: int, start: int = 0) -> Iterator[list[Line]]:
        """The records from the ``start``-th on, read from ``fd`` and validated again, at most ``size`` at a time,
        each batch of one kind. Raises :class:`ImportFileError` if the file is not the one checked."""
        st = os.fstat(fd)
        if (st.st_size, st.st_mtime_ns) != self.stat:
            raise ImportFileError(f"{self.source} changed after it was checked; nothing was imported")
        batch: list[Line] = []
        places = zip(
            self.offsets[start:].tolist(), self.lengths[start:].tolist(), self.crcs[start:].tolist(), strict=True
        )
        for offset, length, crc in places:
            raw = os.pread(fd, length, offset)
            if zlib.crc32(raw) != crc:
                raise ImportFileError(f"{self.source} changed while it was being imported (at byte {offset})")
            line = parse_line(raw.decode("utf-8"))
            if batch and (len(batch) >= size or batch[-1].kind is not line.kind):
                yield batch
                batch = []
            batch.append(line)
        if batch:
            yield batch


@dataclass
class CheckedImport:
    """A whole import file validated: per kind counts, the vectors' models, and where each record to write is."""

    source: str
    read: int
    repeated: int
    counts: dict[str, int]
    # Lines with vectors, by (model id, dimension).
    vector_models: dict[tuple[str, int], int]
    # Memory lines that carry no vectors (embedded on import).
    without_vectors: int
    _file: IO[bytes]
    places: Places
    # The file's path, for a child process to open it again (None: standard input, spooled to an unnamed file).
    path: str | None = None

    @property
    def to_write(self) -> int:
        """Records the import writes (the last line of each repeated id)."""
        return int(self.places.offsets.size)

    def batches(self, size: int, start: int = 0) -> Iterator[list[Line]]:
        """The records in write order from the ``start``-th on, at most ``size`` at a time, each batch of one kind."""
        return self.places.batches(self._file.fileno(), size, start)

    def close(self) -> None:
        """Close the file (a spooled standard input is deleted)."""
        self._file.close()


def _open_source(path: str) -> tuple[IO[bytes], str]:
    """The file to import, opened for binary reads; standard input is spooled to an unnamed temporary file."""
    if path != "-":
        target = Path(path).expanduser()
        try:
            return open(target, "rb"), path
        except OSError as exc:
            raise ImportFileError(f"cannot read {path}: {exc.strerror or exc}") from exc
    spool = tempfile.TemporaryFile()  # noqa: SIM115 - closed by CheckedImport.close
    stdin: Any = sys.stdin
    buffer = getattr(stdin, "buffer", None)
    while True:
        chunk = buffer.read(1 << 20) if buffer is not None else stdin.read(1 << 20).encode("utf-8")
        if not chunk:
            break
        spool.write(chunk)
    spool.flush()
    return spool, "standard input"


def check_import(path: str, advance: Advance | None = None) -> CheckedImport:
    """Validate every line of ``path`` (``-``: standard input) without keeping its records.

    Raises :class:`ImportFileError` naming the first bad lines (and how many there are). A later
    line with the id of an earlier one replaces it (idempotent on id); records are written kind
    by kind, in each kind's order (memories oldest first), ties in file order.
    """
    import numpy as np

    fh, source = _open_source(path)
    try:
        return _check(fh, source, None if path == "-" else str(Path(path).expanduser()), advance, np)
    except BaseException:
        fh.close()
        raise


def _check(fh: IO[bytes], source: str, path: str | None, advance: Advance | None, np: Any) -> CheckedImport:
    kind_codes = {name: code for code, name in enumerate(KINDS)}
    codes, id_hi, id_lo, keys = array("B"), array("Q"), array("Q"), array("q")
    offsets, lengths, crcs = array("q"), array("q"), array("I")
    vector_models: dict[tuple[str, int], int] = {}
    errors: list[str] = []
    error_count = total = number = position = without_vectors = 0
    fh.seek(0)
    for raw in fh:
        number += 1
        start, position = position, position + len(raw)
        if not raw.strip():
            continue
        total += 1
        try:
            line = parse_line(raw.decode("utf-8"), as_lists=False)
        except UnicodeDecodeError as exc:
            problem: str | None = f"not UTF-8 text (byte {exc.start + 1})"
        except ValueError as exc:
            problem = str(exc)
        else:
            problem = None
        if problem is not None:
            error_count += 1
            if len(errors) < MAX_IMPORT_ERRORS_SHOWN:
                errors.append(f"line {number}: {problem}")
            continue
        if error_count:
            continue  # the file is refused: only the remaining errors matter now
        hi, lo = _id_halves(line.kind.id_of(line.record))
        codes.append(kind_codes[line.kind.name])
        id_hi.append(hi)
        id_lo.append(lo)
        keys.append(line.kind.order_key(line.record))
        offsets.append(start)
        lengths.append(len(raw))
        crcs.append(zlib.crc32(raw))
        if line.vectors is not None and line.model is not None:
            shape = (line.model, len(line.vectors[0]))
            vector_models[shape] = vector_models.get(shape, 0) + 1
        elif line.kind.vector_names:
            without_vectors += 1
        if advance is not None:
            advance(1)
    if error_count:
        more = f" (and {error_count - len(errors)} more)" if error_count > len(errors) else ""
        raise ImportFileError(
            f"{source}: {error_count} of {total} lines are invalid, nothing was imported: {'; '.join(errors)}{more}"
        )
    st = os.fstat(fh.fileno())
    code = np.frombuffer(codes, dtype=np.uint8) if codes else np.zeros(0, np.uint8)
    hi_a = np.frombuffer(id_hi, dtype=np.uint64) if id_hi else np.zeros(0, np.uint64)
    lo_a = np.frombuffer(id_lo, dtype=np.uint64) if id_lo else np.zeros(0, np.uint64)
    pos = np.arange(code.size)
    # The last line of each (kind, id): sorted by kind, id, then position, a record is kept when the next differs.
    by_id = np.lexsort((pos, lo_a, hi_a, code))
    c, h, lo = code[by_id], hi_a[by_id], lo_a[by_id]
    same_as_next = (c[1:] == c[:-1]) & (h[1:] == h[:-1]) & (lo[1:] == lo[:-1])
    kept = by_id[np.append(~same_as_next, True)] if by_id.size else by_id
    key_a = np.frombuffer(keys, dtype=np.int64)[kept] if keys else np.zeros(0, np.int64)
    order = kept[np.lexsort((kept, key_a, code[kept]))] if kept.size else kept
    counts = {name: int((code[order] == kind_codes[name]).sum()) for name in KINDS}

    def pick(values: array[int], dtype: Any) -> Any:
        return np.frombuffer(values, dtype=dtype)[order].copy() if len(values) else np.zeros(0, dtype)

    return CheckedImport(
        source=source,
        read=total,
        repeated=total - int(order.size),
        counts=counts,
        vector_models=vector_models,
        without_vectors=without_vectors,
        _file=fh,
        places=Places(
            source,
            (st.st_size, st.st_mtime_ns),
            pick(offsets, np.int64),
            pick(lengths, np.int64),
            pick(crcs, np.uint32),
        ),
        path=path,
    )


def check_vectors(checked: CheckedImport, model_id: str, dim: int) -> None:
    """Refuse (before anything is written) vectors of another model or size than the store's."""
    for (model, size), lines in checked.vector_models.items():
        if model != model_id or size != dim:
            raise ModelMismatchError(
                f"{checked.source}: {lines} records carry vectors of {model!r} (dim {size}), but this store "
                f"embeds with {model_id!r} (dim {dim}); nothing was imported. Import with --reembed to embed "
                "them with this store's model, or import into a store of that model"
            )


def import_checked(
    checked: CheckedImport,
    writers: Mapping[str, Callable[[], KindWriter]],
    *,
    use_vectors: bool,
    batch: int = DEFAULT_BATCH,
    advance: Advance | None = None,
    memories_first: MemoriesFirst | None = None,
) -> dict[str, Any]:
    """Write a checked file, ``batch`` records at a time; the writers' summaries (their counts summed).

    ``writers`` builds the writer of each kind when the file has records of it. With
    ``use_vectors`` the records' own vectors are written (call :func:`check_vectors` first);
    without, every record is embedded. ``memories_first`` may write the memories (which come first
    in write order) another way: ``import_pipeline.write_memories``, with a child process.
    """
    open_writers: dict[str, KindWriter] = {}
    try:
        start = 0
        if memories_first is not None and checked.counts.get(MEMORY) and MEMORY in writers:
            open_writers[MEMORY] = writers[MEMORY]()
            start = memories_first(checked, open_writers[MEMORY], use_vectors, batch, advance)
        for lines in checked.batches(batch, start):
            kind = lines[0].kind.name
            if kind not in open_writers:
                factory = writers.get(kind)
                if factory is None:
                    raise ImportFileError(f"{checked.source}: records of type {kind!r} cannot be imported here")
                open_writers[kind] = factory()
            vectors = [line.vectors for line in lines] if use_vectors else None
            open_writers[kind].write([line.record for line in lines], vectors)
            if advance is not None:
                advance(len(lines))
    except BaseException:
        for writer in open_writers.values():
            writer.close()
        raise
    result: dict[str, Any] = {"imported": 0}
    for writer in open_writers.values():
        for key, value in writer.finish().items():
            result[key] = result.get(key, 0) + value
    return result


class PlanWriter:
    """Writes plan lines through the plan service (embedding each prompt: a plan's id follows its prompt)."""

    def __init__(self, service: PlanService) -> None:
        self.service = service
        self.written = 0

    def write(self, records: Sequence[Any], vectors: Sequence[tuple[Vector, ...] | None] | None = None) -> None:
        """Write one batch of plans (they carry no vectors)."""
        self.written += self.service.import_records(list(records), batch=max(1, len(records)))

    def finish(self) -> dict[str, Any]:
        """How many plans were written."""
        return {"plans": self.written}

    def close(self) -> None:
        """Nothing is held between batches."""


def export_plans(service: PlanService) -> Iterator[str]:
    """Every plan of the identity, oldest first, as the lines export writes after the memories."""
    for record in service.export():
        yield record.model_dump_json()


def memory_writer(service: MemoryService) -> Callable[[], KindWriter]:
    """The writer of memories into ``service``'s collection."""
    from ..memory.importing import MemoryImporter
    from ..memory.service import INDEX_AFTER_UNINDEXED, MEMORIES

    every = MEMORIES.layout.segment_points
    return lambda: MemoryImporter(service.coll, service.embedder, INDEX_AFTER_UNINDEXED, every)


# ---------------------------------------------------------------------------------------
# Export


def vector_block(model_id: str, names: Sequence[str], vectors: Mapping[str, Sequence[float]]) -> dict[str, str]:
    """The ``vectors`` object of an exported line: the model's id and each vector as base64 float32."""
    import numpy as np

    block = {"model": model_id}
    for name in names:
        block[name] = base64.b64encode(np.asarray(vectors[name], dtype="<f4").tobytes()).decode("ascii")
    return block


def export_lines(
    open_service: Callable[[], MemoryService],
    journal_service: Callable[[], MemoryService | None],
    warn: Callable[[str], None],
    *,
    model_id: str | None = None,
    set_total: Callable[[int], None] | None = None,
    batch: int = DEFAULT_BATCH,
) -> Iterator[str]:
    """Every memory as one JSON line (no newline), from the engine, and from the journal for whatever
    the engine cannot read. With ``model_id`` each line carries its vectors, made by that model.

    ``open_service`` opens the memory service (called inside, since opening a damaged collection is
    itself what fails); ``journal_service`` builds a service over the journal alone (None when the
    store keeps none); ``warn`` is told when the engine could not be read.
    """
    kind = KINDS[MEMORY]
    with_vectors = model_id is not None

    def lines(points: Iterator[tuple[MemoryRecord, dict[str, list[float]] | None]]) -> Iterator[tuple[str, str]]:
        for record, vectors in points:
            text = record.model_dump_json()
            if model_id is not None:
                if vectors is None or any(name not in vectors for name in kind.vector_names):
                    raise StoreDamagedError(f"memory {record.id} has no stored vectors to export")
                block = json.dumps(vector_block(model_id, kind.vector_names, vectors))
                text = f'{text[:-1]},"{VECTORS}":{block}}}'
            yield record.id, text

    written: set[str] = set()
    try:
        service = open_service()
        if set_total is not None:
            set_total(service.coll.count())
        for record_id, text in lines(service.export_points(batch, with_vectors)):
            written.add(record_id)
            yield text
    except StoreDamagedError as exc:
        warn(f"{exc}; reading the rest from the journal")
        fallback = journal_service()
        if fallback is None:
            return
        for record_id, text in lines(fallback.export_points(batch, with_vectors)):
            if record_id not in written:
                written.add(record_id)
                yield text


def journal_memory_service(store: Store, embedder: Embedder, config: Any) -> MemoryService | None:
    """A memory service reading the journal alone (the engine could not read every memory)."""
    from ..memory.service import MEMORIES, MemoryService
    from ..store.edge import IdentityStore
    from ..store.rebuild import JournalView

    # Only the process that owns a shared store has its files open (a sharing client reads through the owner).
    local = getattr(store, "local_store", store)
    if not isinstance(local, IdentityStore):
        return None
    journal = local.journal_only(MEMORIES)
    return MemoryService(JournalView(MEMORIES.name, journal), embedder, config, thread="cli")
