"""Moving an identity's memories out of a store and into one: export and import as JSON lines.

The CLI only calls these and prints; they log, never print. An import validates the whole
file before it writes anything: one bad line and nothing is imported.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..errors import InvalidInput, StoreDamagedError
from ..validation import MAX_DEPTH, describe_validation_error, input_rule_error, json_shape_problem

if TYPE_CHECKING:
    from ..embeddings.providers import Embedder
    from ..memory.models import MemoryRecord
    from ..memory.service import MemoryService
    from ..store.contract import Store

logger = logging.getLogger(__name__)

MAX_IMPORT_ERRORS_SHOWN = 10

Advance = Callable[[int], None]


class ImportFileError(InvalidInput):
    """An import file that cannot be read, or has invalid lines: nothing was imported."""

    kind = "invalid_import"


def read_lines(path: str) -> list[str]:
    """The lines of ``path`` (``-``: standard input)."""
    if path == "-":
        return sys.stdin.read().splitlines()
    try:
        return Path(path).expanduser().read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ImportFileError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ImportFileError(f"{path} is not UTF-8 text: {exc}") from exc


def parse_import_lines(lines: Sequence[str], source: str) -> tuple[list[MemoryRecord], int]:
    """Validate every line as a MemoryRecord; raise naming each bad line. Returns (records, duplicate ids)."""
    from ..memory.models import MemoryRecord

    by_id: dict[str, MemoryRecord] = {}
    errors: list[str] = []
    total = 0
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        total += 1
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(f"line {number}: not valid JSON ({exc.msg} at column {exc.colno})")
            continue
        except RecursionError:
            errors.append(f"line {number}: nests deeper than {MAX_DEPTH} levels")
            continue
        if not isinstance(data, dict):
            errors.append(f"line {number}: must be a JSON object, got {type(data).__name__}")
            continue
        problem = json_shape_problem(data)
        if problem is not None:
            errors.append(f"line {number}: {describe_validation_error(input_rule_error('record', *problem))}")
            continue
        try:
            record = MemoryRecord.model_validate(data)
        except ValidationError as exc:
            errors.append(f"line {number}: {describe_validation_error(exc)}")
            continue
        # Idempotent on id: a later line with the same id replaces the earlier one.
        by_id.pop(record.id, None)
        by_id[record.id] = record
    if errors:
        shown = "; ".join(errors[:MAX_IMPORT_ERRORS_SHOWN])
        more = f" (and {len(errors) - MAX_IMPORT_ERRORS_SHOWN} more)" if len(errors) > MAX_IMPORT_ERRORS_SHOWN else ""
        raise ImportFileError(
            f"{source}: {len(errors)} of {total} lines are invalid, nothing was imported: {shown}{more}"
        )
    return list(by_id.values()), total - len(by_id)


def import_memories(
    service: MemoryService, records: list[MemoryRecord], batch: int, advance: Advance | None = None
) -> dict[str, Any]:
    """Write validated records, oldest first (the store's write order follows creation whatever the file's)."""
    records.sort(key=lambda record: record.created_at)
    service.coll.observer = advance
    try:
        return service.import_records(records, batch=batch)
    finally:
        service.coll.observer = None


def export_memories(
    service: MemoryService,
    journal_service: Callable[[], MemoryService | None],
    warn: Callable[[str], None],
    set_total: Callable[[int], None] | None = None,
) -> Iterator[MemoryRecord]:
    """Every memory, from the engine, and from the journal for whatever the engine cannot read.

    ``journal_service`` builds a service over the journal alone (None when the store keeps none);
    ``warn`` is told when the engine could not be read.
    """
    written: set[str] = set()
    try:
        if set_total is not None:
            set_total(service.coll.count())
        for record in service.export():
            written.add(record.id)
            yield record
    except StoreDamagedError as exc:
        warn(f"{exc}; reading the rest from the journal")
        fallback = journal_service()
        if fallback is None:
            return
        for record in fallback.export():
            if record.id not in written:
                written.add(record.id)
                yield record


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
