"""A stored memory: its payload's one typed form, and every conversion to and from it in one place.

:class:`StoredMemory` is what a memory point's payload holds. The services write a payload only as
``StoredMemory(...).to_payload()`` (a new memory) or ``memory.payload_of(*fields)`` (the fields an
update changes), and read one with :meth:`StoredMemory.from_payload`; the tool views
(:func:`public_view`, :func:`full_view`) and the export line (:func:`export_record`) are built from
it. A field added to a memory is added here once. Code that needs only a field or two of many memories
(the comparison loops, ranking, chains, recall) reads them through :class:`MemoryFields`.
``tests/test_architecture.py`` fails when a payload is built, or a stored field read, by hand anywhere
else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from .models import MemoryRecord
from .restated import RESTATED, RESTATED_META

# The links of an update chain (memory/chains.py walks them): the id a memory replaced, the id that replaced it.
SUPERSEDES = "supersedes"
SUPERSEDED_BY = "superseded_by"
# Set while the ``ctx`` vector is a placeholder (the memory's own vector): memory_store answers before the context
# window's embedding ends (memory/context_vectors.py), and the marker goes once the real vector is written.
CTX_PENDING = "ctx_pending"

# Payload fields left out while empty: a memory without links, restated wordings or a pending vector stores none.
_OPTIONAL = frozenset({SUPERSEDES, SUPERSEDED_BY, RESTATED, RESTATED_META, CTX_PENDING})


@dataclass
class StoredMemory:
    """The payload of one memory point (its id and vectors are kept beside it by the store).

    Times are ISO 8601 strings, as stored (the datetime index parses them). ``ctx_text`` is what the
    context vector and BM25 index: the memory's context window, then its restated wordings.
    """

    content: str
    ctx_text: str
    content_hash: str
    created_at: str | None
    updated_at: str | None
    kind: str = "note"
    tags: list[str] = field(default_factory=list)
    importance: float = 0.5
    files: list[str] = field(default_factory=list)
    thread: str | None = None
    seq: int | None = None
    supersedes: str | None = None
    superseded_by: str | None = None
    restated: list[str] = field(default_factory=list)
    restated_meta: list[dict[str, Any]] = field(default_factory=list)
    ctx_pending: bool = False
    """The ``ctx`` vector is still the placeholder: the context window's vector is being (or is to be) written."""

    def to_payload(self) -> dict[str, Any]:
        """The payload as written: every field, the optional ones only when set."""
        return {f.name: value for f in _FIELDS if not _left_out(f.name, value := getattr(self, f.name))}

    def payload_of(self, *names: str) -> dict[str, Any]:
        """The stored form of the fields ``names`` (what an update of those fields writes)."""
        unknown = set(names) - _NAMES
        if unknown:
            raise KeyError(f"a memory has no field {sorted(unknown)}")
        return {name: getattr(self, name) for name in names}

    def updated(self, **changes: Any) -> StoredMemory:
        """A copy with ``changes`` applied (the stored memory itself is not changed)."""
        return replace(self, **changes)

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> StoredMemory:
        """A memory as read from the store; fields an older version did not write take their defaults."""
        content = str(payload.get("content", ""))
        seq = payload.get("seq")
        return cls(
            content=content,
            ctx_text=str(payload.get("ctx_text", content)),
            content_hash=str(payload.get("content_hash", "")),
            created_at=payload.get("created_at"),
            updated_at=payload.get("updated_at"),
            kind=str(payload.get("kind", "note")),
            tags=list(payload.get("tags", [])),
            importance=float(payload.get("importance", 0.5)),
            files=list(payload.get("files", [])),
            thread=payload.get("thread"),
            seq=seq if isinstance(seq, int) else None,
            supersedes=payload.get(SUPERSEDES),
            superseded_by=payload.get(SUPERSEDED_BY),
            restated=[str(t) for t in payload.get(RESTATED, [])],
            restated_meta=[dict(m) for m in payload.get(RESTATED_META, [])],
            ctx_pending=payload.get(CTX_PENDING) is True,
        )


_FIELDS = fields(StoredMemory)
_NAMES = frozenset(f.name for f in _FIELDS)


def _left_out(name: str, value: Any) -> bool:
    return name in _OPTIONAL and not value


class MemoryFields:
    """Typed reads of one memory's payload as the store returned it, whole or only some fields.

    No copy and no validation: the comparison loops, ranking and chain walks read a field or two of many
    memories, and recall reads only the ranking fields on purpose (for speed), so building a whole
    :class:`StoredMemory` there would cost time and invent defaults for fields that were never read. Each
    field keeps the default the code reading it always had.
    """

    __slots__ = ("_payload",)

    def __init__(self, payload: Mapping[str, Any]) -> None:
        self._payload = payload

    @property
    def content(self) -> str:
        return str(self._payload.get("content", ""))

    @property
    def kind(self) -> str:
        return str(self._payload.get("kind", "note"))

    @property
    def created_at(self) -> str | None:
        return self._payload.get("created_at")

    @property
    def updated_at(self) -> str | None:
        return self._payload.get("updated_at")

    @property
    def importance(self) -> object:
        # As stored: ranking ignores a value that is not a number rather than failing a search on it.
        return self._payload.get("importance")

    @property
    def thread(self) -> str | None:
        return self._payload.get("thread")

    @property
    def seq(self) -> int | None:
        # None unless an int is stored, as StoredMemory.from_payload reads it (the neighbour boost needs seq +- 1).
        seq = self._payload.get("seq")
        return seq if isinstance(seq, int) else None

    @property
    def in_thread(self) -> bool:
        """Whether the memory has a place in a thread (both fields stored)."""
        return "thread" in self._payload and "seq" in self._payload

    @property
    def ctx_text(self) -> str | None:
        return self._payload.get("ctx_text")

    @property
    def restated(self) -> list[str]:
        return [str(t) for t in self._payload.get(RESTATED, [])]

    @property
    def ctx_pending(self) -> bool:
        return self._payload.get(CTX_PENDING) is True

    @property
    def supersedes(self) -> str | None:
        return self.linked(SUPERSEDES)

    @property
    def superseded_by(self) -> str | None:
        return self.linked(SUPERSEDED_BY)

    def linked(self, link: str) -> str | None:
        """The id one chain link (``SUPERSEDES`` or ``SUPERSEDED_BY``) points to, None when unset."""
        if link not in (SUPERSEDES, SUPERSEDED_BY):
            raise KeyError(f"{link!r} is not a chain link")
        value = self._payload.get(link)
        return str(value) if value else None


def link_payload(link: str, memory_id: str) -> dict[str, Any]:
    """The update that sets one chain link (``SUPERSEDES`` or ``SUPERSEDED_BY``) of a memory to ``memory_id``."""
    if link not in (SUPERSEDES, SUPERSEDED_BY):
        raise KeyError(f"{link!r} is not a chain link")
    return {link: memory_id}


def public_view(point_id: str, payload: dict[str, Any], score: float | None = None) -> dict[str, Any]:
    """The compact shape tools return for one memory."""
    return _public(point_id, StoredMemory.from_payload(payload), score)


def _public(point_id: str, memory: StoredMemory, score: float | None = None) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": point_id,
        "content": memory.content,
        "kind": memory.kind,
        "tags": memory.tags,
        "created_at": memory.created_at,
    }
    for key in (SUPERSEDES, SUPERSEDED_BY, RESTATED):
        if value := getattr(memory, key):
            view[key] = value
    if score is not None:
        view["score"] = round(score, 4)
    return view


def full_view(point_id: str, payload: dict[str, Any]) -> dict[str, Any]:
    """Every field a memory shows (``memory_get``, ``memory_list``, ``memory_forget``): no internals."""
    memory = StoredMemory.from_payload(payload)
    view = _public(point_id, memory)
    view.update(importance=memory.importance, files=memory.files, updated_at=memory.updated_at)
    return view


def export_record(point_id: str, payload: dict[str, Any]) -> MemoryRecord:
    """The memory as one export line."""
    memory = StoredMemory.from_payload(payload)
    exported = {name: getattr(memory, name) for name in MemoryRecord.model_fields if name in _NAMES}
    # A memory without a time cannot be exported: the model refuses it rather than inventing one.
    return MemoryRecord.model_validate({**exported, "id": point_id, "created_at": payload["created_at"]})
