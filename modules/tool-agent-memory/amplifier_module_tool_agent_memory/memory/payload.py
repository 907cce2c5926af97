"""What a stored memory's payload derives from its text: the exact-duplicate hash, the BM25 context."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

# Other wordings merged into a memory (restatements), kept and searchable.
RESTATED = "restated"
_WS = re.compile(r"\s+")


def searchable_context(ctx: str, restated: Sequence[str]) -> str:
    """What ctx_text indexes: the context window, then the wordings merged into the memory."""
    return "\n".join([ctx, *restated])


def normalise_content(text: str) -> str:
    """The form two memories must share to be exact duplicates: case- and whitespace-folded."""
    return _WS.sub(" ", text).strip().casefold()


def content_hash(text: str) -> str:
    """sha256 of the normalised content."""
    return hashlib.sha256(normalise_content(text).encode("utf-8")).hexdigest()
