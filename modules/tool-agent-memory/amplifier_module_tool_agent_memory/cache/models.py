"""Pydantic models of the working-memory cache: tool inputs and the stored item and block records.

The inputs double as the tools' JSON Schemas. The stored records are what a Qdrant point
of the ``cache`` collection carries as payload (``type`` tells items and blocks apart);
times are stored as RFC 3339 UTC strings so that the datetime payload index can filter them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

from ..redaction import redact
from ..store.contract import iso
from ..validation import ToolInput, check_point_id, parse_timestamp

CacheKind = Literal["fact", "decision", "snippet", "warning"]
CACHE_KINDS: tuple[str, ...] = ("fact", "decision", "snippet", "warning")
BlockStatus = Literal["open", "closed"]

MAX_CONTENT_CHARS = 4_000
MAX_TTL_MINUTES = 43_200.0  # 30 days: longer-lived knowledge belongs in long-term memory
MIN_PACK_BUDGET = 50
MAX_PACK_BUDGET = 8_000
MAX_CACHE_SEARCH_LIMIT = 20
DEFAULT_SCOPE = "default"
SCOPE_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/@-]{0,99}$")


def check_scope(value: str) -> str:
    """A scope is 1-100 letters, digits or ``_ . : / @ -``, starting with a letter or digit."""
    if not SCOPE_PATTERN.fullmatch(value):
        raise ValueError(
            "must be 1-100 characters of letters, digits, '_', '.', ':', '/', '@' or '-', "
            "starting with a letter or digit (e.g. 'default' or 'task:fix-auth')"
        )
    if redact(value)[1]:
        # A scope is a name, stored and shown as it is: it cannot be redacted without changing which scope it is.
        raise ValueError("must not contain a secret (a scope is stored and shown as it is)")
    return value


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must contain non-whitespace text")
    return value


class _Input(ToolInput):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class CacheWriteInput(_Input):
    """Append one item to a scope's working memory."""

    kind: CacheKind = Field(..., description="fact, decision, snippet or warning.")
    content: str = Field(..., min_length=1, max_length=MAX_CONTENT_CHARS, description="The item (1-4,000 chars).")
    importance: float = Field(0.5, ge=0.0, le=1.0, allow_inf_nan=False, description="0..1 (default 0.5).")
    file_ref: str | None = Field(
        None, min_length=1, max_length=1_000, description="File (and line) the item is about, e.g. src/auth.py:42."
    )
    scope: str = Field(DEFAULT_SCOPE, description="Working-memory scope, e.g. task:fix-auth (default 'default').")
    ttl_minutes: float | None = Field(
        None, ge=0.0, le=MAX_TTL_MINUTES, allow_inf_nan=False,
        description="Minutes the item lives after its last write or access; 0 = never expires. Default from config.",
    )

    _content = field_validator("content")(classmethod(lambda cls, v: _not_blank(v)))
    _scope = field_validator("scope")(classmethod(lambda cls, v: check_scope(v)))

    @field_validator("file_ref")
    @classmethod
    def _ref(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = value.strip()
        if not value:
            raise ValueError("must contain non-whitespace text")
        return value


class CacheSearchInput(_Input):
    """Phase one of a two-phase search: which blocks are relevant."""

    query: str = Field(..., min_length=1, max_length=2_000, description="What to look for.")
    scope: str = Field(DEFAULT_SCOPE, description="Scope to search (default 'default').")
    limit: int = Field(5, ge=1, le=MAX_CACHE_SEARCH_LIMIT, description="Blocks to return (1-20, default 5).")

    _query = field_validator("query")(classmethod(lambda cls, v: _not_blank(v)))
    _scope = field_validator("scope")(classmethod(lambda cls, v: check_scope(v)))


class CacheGetInput(_Input):
    """Phase two: one block's live items in full."""

    block_id: str = Field(..., min_length=1, max_length=64, description="A block_id from cache_search or cache_write.")

    _id = field_validator("block_id")(classmethod(lambda cls, v: check_point_id(v)))


class CacheCompactInput(_Input):
    """Close a scope's open block now."""

    scope: str = Field(DEFAULT_SCOPE, description="Scope whose open block to close (default 'default').")

    _scope = field_validator("scope")(classmethod(lambda cls, v: check_scope(v)))


class CachePackInput(_Input):
    """A token-budgeted memory pack of a scope."""

    scope: str = Field(DEFAULT_SCOPE, description="Scope to pack (default 'default').")
    token_budget: int | None = Field(
        None, ge=MIN_PACK_BUDGET, le=MAX_PACK_BUDGET,
        description="Most tokens of the whole result (50-8,000; default 600).",
    )
    query: str | None = Field(
        None, min_length=1, max_length=2_000, description="Rank items by relevance to this text first."
    )
    since_version: int | None = Field(
        None, ge=0, description="Only items written or changed after this pack version (a delta pack)."
    )

    _scope = field_validator("scope")(classmethod(lambda cls, v: check_scope(v)))

    @field_validator("query")
    @classmethod
    def _query(cls, value: str | None) -> str | None:
        return None if value is None else _not_blank(value)


class _Stored(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)

    @field_serializer("*", when_used="json")
    def _times(self, value: Any) -> Any:
        return iso(value) if isinstance(value, datetime) else value

    def payload_of(self, *names: str) -> dict[str, Any]:
        """The stored form of the fields ``names`` (what an update of those fields writes; unset ones left out)."""
        unknown = set(names) - set(type(self).model_fields)
        if unknown:
            raise KeyError(f"a {type(self).__name__} has no field {sorted(unknown)}")
        return self.model_dump(mode="json", include=set(names), exclude_none=True)


class CacheFields:
    """Typed reads of a cache point's payload (an item or a block) as the store returned it, without validating it.

    The sweep, the scope list and the cross-process checks read one or two fields of points they do not load
    (and some of them may be unreadable as a whole record: loading skips those), so they read them here rather
    than through :class:`CacheItem` / :class:`CacheBlock`. Each field keeps the default its readers always had.
    """

    __slots__ = ("_payload",)

    def __init__(self, payload: Mapping[str, Any]) -> None:
        self._payload = payload

    @property
    def type(self) -> str | None:
        """``"item"`` or ``"block"``."""
        value = self._payload.get("type")
        return None if value is None else str(value)

    @property
    def status(self) -> str | None:
        """A block's ``"open"`` or ``"closed"``."""
        value = self._payload.get("status")
        return None if value is None else str(value)

    @property
    def version(self) -> int:
        return int(self._payload.get("version", 0))

    @property
    def scope(self) -> str:
        return str(self._payload.get("scope", ""))

    @property
    def block_id(self) -> str:
        return str(self._payload.get("block_id", ""))

    @property
    def created_at(self) -> str:
        """As stored (RFC 3339 UTC, so the strings sort by time)."""
        return str(self._payload.get("created_at", ""))

    @property
    def ttl_expires_at(self) -> datetime | None:
        stamp = self._payload.get("ttl_expires_at")
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")) if stamp else None


def _aware(value: object) -> datetime | None:
    return None if value is None else parse_timestamp(value)


class CacheItem(_Stored):
    """One working-memory item (payload of a point with ``type == "item"``; its vector embeds ``content``)."""

    type: Literal["item"] = "item"
    id: str = Field(exclude=True)
    scope: str
    block_id: str
    kind: CacheKind
    content: str
    importance: float = 0.5
    file_ref: str | None = None
    created_at: datetime
    updated_at: datetime
    ttl_minutes: float
    ttl_expires_at: datetime | None = None
    access_count: int = 0
    version: int
    tokens: int
    session: str = ""
    # The item that replaced this one (a write that changed its value); set, the item is no longer live.
    superseded_by: str | None = None

    _times_in = field_validator("created_at", "updated_at", "ttl_expires_at", mode="before")(
        classmethod(lambda cls, v: _aware(v))
    )

    def alive(self, now: datetime) -> bool:
        """Live at ``now``: not expired and not replaced by a newer item (a replaced one waits for its expiry)."""
        return self.superseded_by is None and (self.ttl_expires_at is None or self.ttl_expires_at > now)

    def payload(self) -> dict[str, Any]:
        """The point payload (no id; ``ttl_expires_at`` left out when the item never expires)."""
        return self.model_dump(mode="json", exclude_none=True)

    def full_view(self) -> dict[str, Any]:
        """The item in full, as cache_get returns it."""
        view: dict[str, Any] = {
            "id": self.id,
            "kind": self.kind,
            "content": self.content,
            "importance": round(self.importance, 4),
        }
        if self.file_ref:
            view["file_ref"] = self.file_ref
        view.update(
            created_at=iso(self.created_at),
            updated_at=iso(self.updated_at),
            ttl_expires_at=iso(self.ttl_expires_at) if self.ttl_expires_at else None,
            access_count=self.access_count,
            version=self.version,
        )
        return view


class CacheBlock(_Stored):
    """One block of a scope (a point with ``type == "block"``; a closed block's vector embeds its summary)."""

    type: Literal["block"] = "block"
    id: str = Field(exclude=True)
    scope: str
    seq: int
    status: BlockStatus = "open"
    token_count: int = 0
    created_at: datetime
    closed_at: datetime | None = None
    # Extractive summary as (item id, line) pairs: lines of items that later expire are left out when shown.
    summary_lines: list[tuple[str, str]] = Field(default_factory=list)
    summary_text: str | None = None
    summary_source: Literal["extractive", "llm"] | None = None
    closed_items: int = 0
    version: int = 0

    _times_in = field_validator("created_at", "closed_at", mode="before")(classmethod(lambda cls, v: _aware(v)))

    def payload(self) -> dict[str, Any]:
        """The point payload (no id)."""
        return self.model_dump(mode="json", exclude_none=True)
