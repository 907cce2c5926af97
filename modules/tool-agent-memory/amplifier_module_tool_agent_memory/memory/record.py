"""A stored memory as the tools and export see it: every view of its payload in one place.

The services read a memory's tool views and export records only through :func:`public_view`,
:func:`full_view` and :func:`export_record`, so a field added to what a memory shows is added here once.
"""

from __future__ import annotations

from typing import Any

from .chains import SUPERSEDED_BY, SUPERSEDES
from .models import MemoryRecord, RestatedMeta
from .restated import RESTATED, RESTATED_META


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
        restated_meta=[RestatedMeta.model_validate(m) for m in payload.get(RESTATED_META, [])],
    )
