"""A stored memory: its payload, and every conversion of it (tool views, export records) in one place.

The store keeps a memory as a JSON payload; :class:`StoredMemory` is its typed form. The services
write payloads only through :meth:`StoredMemory.to_payload` and read views and export records only
through :func:`public_view`, :func:`full_view` and :func:`export_record`, so a field added to a
memory is added here once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .chains import SUPERSEDED_BY, SUPERSEDES
from .models import MemoryRecord

# The other wordings merged into a memory (see memory/service.py's merge rule).
RESTATED = "restated"


@dataclass(frozen=True)
class StoredMemory:
    """The payload of one memory point (its id is the point's)."""

    content: str
    ctx_text: str
    content_hash: str
    kind: str
    tags: list[str]
    importance: float
    files: list[str]
    created_at: str
    updated_at: str
    thread: str
    seq: int
    supersedes: str | None = None
    superseded_by: str | None = None
    restated: tuple[str, ...] = ()

    def to_payload(self) -> dict[str, Any]:
        """The payload as stored (links and restated wordings only when there are any)."""
        payload: dict[str, Any] = {
            "content": self.content,
            "ctx_text": self.ctx_text,
            "content_hash": self.content_hash,
            **({RESTATED: list(self.restated)} if self.restated else {}),
            "kind": self.kind,
            "tags": list(self.tags),
            "importance": self.importance,
            "files": list(self.files),
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "thread": self.thread,
            "seq": self.seq,
        }
        for key, value in ((SUPERSEDES, self.supersedes), (SUPERSEDED_BY, self.superseded_by)):
            if value:
                payload[key] = value
        return payload


def public_view(point_id: str, payload: dict[str, Any], score: float | None = None) -> dict[str, Any]:
    """The compact shape tools return for one memory."""
    view: dict[str, Any] = {
        "id": point_id,
        "content": payload.get("content", ""),
        "kind": payload.get("kind", "note"),
        "tags": payload.get("tags", []),
        "created_at": payload.get("created_at"),
    }
    for key in (SUPERSEDES, SUPERSEDED_BY, RESTATED):
        if payload.get(key):
            view[key] = payload[key]
    if score is not None:
        view["score"] = round(score, 4)
    return view


def full_view(point_id: str, payload: dict[str, Any]) -> dict[str, Any]:
    """Every field a memory shows (``memory_get``, ``memory_list``, ``memory_forget``): no internals."""
    view = public_view(point_id, payload)
    view.update(
        importance=payload.get("importance", 0.5),
        files=payload.get("files", []),
        updated_at=payload.get("updated_at"),
    )
    return view


def export_record(point_id: str, payload: dict[str, Any]) -> MemoryRecord:
    """The memory as one export line."""
    return MemoryRecord(
        id=point_id,
        content=payload["content"],
        kind=payload.get("kind", "note"),
        tags=payload.get("tags", []),
        importance=payload.get("importance", 0.5),
        files=payload.get("files", []),
        created_at=payload["created_at"],
        updated_at=payload.get("updated_at"),
        supersedes=payload.get(SUPERSEDES),
        superseded_by=payload.get(SUPERSEDED_BY),
        restated=payload.get(RESTATED, []),
    )
