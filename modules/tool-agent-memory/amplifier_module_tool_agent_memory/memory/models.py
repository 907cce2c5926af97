"""Pydantic models at the edges: long-term memory tool inputs and the stored record.

Each input model is also the tool's JSON Schema (see ``tools/spec.py``), so what the
LLM is told and what is enforced cannot drift apart.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints, field_validator

from ..redaction import length_before_redaction
from ..validation import ToolInput, check_point_id, parse_timestamp

MemoryKind = Literal["fact", "decision", "note", "preference", "event"]
MAX_SEARCH_LIMIT = 20
_DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")
MEMORY_KINDS: tuple[str, ...] = ("fact", "decision", "note", "preference", "event")

Tag = Annotated[str, StringConstraints(min_length=1, max_length=100, strip_whitespace=True)]
FilePath = Annotated[str, StringConstraints(min_length=1, max_length=1000, strip_whitespace=True)]


def _given_at_most(limit: int) -> AfterValidator:
    """A stored text's limit: the input's, counted before redaction (a marker is longer than many secrets, so
    a tag of 100 characters holding one is stored longer; export and import must still accept it)."""

    def check(value: str) -> str:
        if length_before_redaction(value) > limit:
            raise ValueError(f"should have at most {limit} characters")
        return value

    return AfterValidator(check)


StoredTag = Annotated[str, StringConstraints(min_length=1, strip_whitespace=True), _given_at_most(100)]
StoredPath = Annotated[str, StringConstraints(min_length=1, strip_whitespace=True), _given_at_most(1000)]
StoredContent = Annotated[str, StringConstraints(min_length=1), _given_at_most(10_000)]


class _Input(ToolInput):
    model_config = ConfigDict(extra="forbid", defer_build=True)


def _time_or_none(value: object) -> datetime | None:
    return None if value is None else parse_timestamp(value)


def parse_until(value: object) -> datetime | None:
    """An inclusive upper time bound: a date alone means through the end of that day."""
    if value is None:
        return None
    ts = parse_timestamp(value)
    if isinstance(value, str) and _DATE_ONLY.fullmatch(value.strip()):
        # "until 2026-11-22" means through that day, not up to its first instant.
        ts = ts.replace(hour=23, minute=59, second=59, microsecond=999_999)  # 9999-12-31 included
    return ts


# The filters memory_search and memory_list share: one definition each (type, parsing, description), so the two
# tools cannot drift apart. Each model lists them in its own order; what differs per tool stays in the model.
SinceFilter = Annotated[
    datetime | None,
    BeforeValidator(_time_or_none),
    Field(description="Only memories created at or after this ISO-8601 time."),
]
UntilFilter = Annotated[
    datetime | None,
    BeforeValidator(parse_until),
    Field(description="Only memories created at or before this ISO-8601 time (a date alone: the end of that day)."),
]
TagsFilter = Annotated[
    list[Tag], Field(max_length=50, description="Only memories with any of these tags.")
]
KindFilter = Annotated[MemoryKind | None, Field(description="Only this kind.")]
FilesFilter = Annotated[
    list[FilePath], Field(max_length=50, description="Only memories about these files.")
]


class MemoryStoreInput(_Input):
    """Store one long-term memory."""

    content: str = Field(..., min_length=1, max_length=10_000, description="What to remember (1-10,000 chars).")
    tags: list[Tag] = Field(default_factory=list, max_length=50, description="Up to 50 tags, 100 chars each.")
    kind: MemoryKind = Field("note", description="fact, decision, note, preference or event.")
    # strict: a JSON true must not pass as importance 1.0
    importance: float = Field(0.5, ge=0.0, le=1.0, strict=True, description="0..1; boosts ranking a little.")
    files: list[FilePath] = Field(default_factory=list, max_length=50, description="Related file paths.")
    supersedes: str | None = Field(
        None,
        max_length=64,
        description="Id of a memory this one updates (it is kept, marked superseded). Changes are also found "
        "without it.",
    )

    @field_validator("content")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must contain non-whitespace text")
        return value

    @field_validator("supersedes")
    @classmethod
    def _supersedes(cls, value: str | None) -> str | None:
        return None if value is None else check_point_id(value)


class MemorySearchInput(_Input):
    """Search long-term memory."""

    query: str = Field(..., min_length=1, max_length=2_000, description="What to look for.")
    limit: int | None = Field(
        None, ge=1, strict=True, description="Results to return (default 5; more than 20 is capped at 20)."
    )
    since: SinceFilter = None
    until: UntilFilter = None
    tags: TagsFilter = Field(default_factory=list)
    kind: KindFilter = None
    files: FilesFilter = Field(default_factory=list)
    # strict: a JSON string "false" must not pass as True
    include_superseded: bool = Field(
        True,
        strict=True,
        description="Also show memories a newer one replaced (ranked below it, marked superseded_by).",
    )

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must contain non-whitespace text")
        return value

    @field_validator("limit")
    @classmethod
    def _cap(cls, value: int | None) -> int | None:
        return None if value is None else min(value, MAX_SEARCH_LIMIT)


class MemoryIdInput(_Input):
    """Address one memory by id."""

    id: str = Field(..., min_length=1, max_length=64, description="The memory id returned by memory_store.")

    @field_validator("id")
    @classmethod
    def _uuid(cls, value: str) -> str:
        return check_point_id(value)


class MemoryLinkInput(_Input):
    """Declare that one memory updates another."""

    id: str = Field(..., min_length=1, max_length=64, description="The newer memory: the one that updates.")
    supersedes: str = Field(
        ...,
        min_length=1,
        max_length=64,
        description="The older memory it replaces (kept, marked superseded_by; the newest of its chain is linked).",
    )

    @field_validator("id", "supersedes")
    @classmethod
    def _uuid(cls, value: str) -> str:
        return check_point_id(value)


class MemoryUnmergeInput(_Input):
    """Undo a merge: a restated wording gets a memory of its own back."""

    id: str = Field(..., min_length=1, max_length=64, description="The memory the wording was merged into.")
    wording: str = Field(
        ...,
        min_length=1,
        max_length=10_000,
        description="The merged text, as stored (one of the memory's restated wordings; case and spaces aside).",
    )

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        return check_point_id(value)


class MemoryListInput(_Input):
    """Page through memories, newest first."""

    limit: int = Field(20, ge=1, le=100, strict=True, description="Memories per page (1-100, default 20).")
    before: datetime | None = Field(
        None, description="Only memories created before this ISO-8601 time (pass the previous page's next_before)."
    )
    kind: KindFilter = None
    since: SinceFilter = None
    until: UntilFilter = None
    tags: TagsFilter = Field(default_factory=list)
    files: FilesFilter = Field(default_factory=list)
    include_superseded: bool = Field(
        True, strict=True, description="Also list memories a newer one replaced (marked superseded_by)."
    )

    @field_validator("before", mode="before")
    @classmethod
    def _iso(cls, value: object) -> datetime | None:
        return _time_or_none(value)


class RestatedMeta(BaseModel):
    """What a wording merged into a memory was stored with (given back when the merge is undone)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    tags: list[Tag] = Field(default_factory=list, max_length=50)
    importance: float = Field(0.5, ge=0.0, le=1.0)
    files: list[FilePath] = Field(default_factory=list, max_length=50)
    created_at: datetime | None = None

    @field_validator("created_at", mode="before")
    @classmethod
    def _iso(cls, value: object) -> datetime | None:
        return None if value is None else parse_timestamp(value)


class MemoryRecord(BaseModel):
    """A stored memory, as exported and imported (one JSON line each)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    id: str = Field(..., min_length=1, max_length=64)
    content: StoredContent
    kind: MemoryKind = "note"
    tags: list[StoredTag] = Field(default_factory=list, max_length=50)
    importance: float = Field(0.5, ge=0.0, le=1.0)
    files: list[StoredPath] = Field(default_factory=list, max_length=50)
    created_at: datetime
    updated_at: datetime | None = None
    supersedes: str | None = Field(None, max_length=64)
    superseded_by: str | None = Field(None, max_length=64)
    restated: list[str] = Field(default_factory=list, max_length=5)
    """Other wordings merged into this memory (restatements), kept and searchable."""
    restated_meta: list[RestatedMeta] = Field(default_factory=list, max_length=5)
    """What each restated wording was stored with, in the same order (memory_unmerge gives it back)."""

    @field_validator("id")
    @classmethod
    def _uuid(cls, value: str) -> str:
        return check_point_id(value)

    @field_validator("supersedes", "superseded_by")
    @classmethod
    def _link(cls, value: str | None) -> str | None:
        return None if value is None else check_point_id(value)

    @field_validator("created_at", "updated_at", mode="before")
    @classmethod
    def _iso(cls, value: object) -> datetime | None:
        return None if value is None else parse_timestamp(value)
