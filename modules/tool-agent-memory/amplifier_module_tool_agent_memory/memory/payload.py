"""What a stored memory's payload derives from a record: the exact-duplicate hash, a wording's metadata."""

from __future__ import annotations

import hashlib
from typing import Any

from ..store.contract import iso
from .models import RestatedMeta
from .restated import normalise_content


def content_hash(text: str) -> str:
    """sha256 of the normalised content."""
    return hashlib.sha256(normalise_content(text).encode("utf-8")).hexdigest()


def meta_payload(meta: RestatedMeta) -> dict[str, Any]:
    """A restated wording's metadata as stored (the time as ISO 8601, none when unknown)."""
    return {
        "tags": list(meta.tags),
        "importance": meta.importance,
        "files": list(meta.files),
        **({"created_at": iso(meta.created_at)} if meta.created_at else {}),
    }
