"""The JSON Schema of each tool's answer (MCP's ``outputSchema``; the Amplifier face does not send them).

Each names the top-level fields a caller can rely on and their JSON types; further fields may be
present (``additionalProperties`` stays open, so an added field is no breaking change). Every
answer carries the ``identity`` it was served for.
"""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]

STRING: Schema = {"type": "string"}
INTEGER: Schema = {"type": "integer"}
NUMBER: Schema = {"type": "number"}
BOOLEAN: Schema = {"type": "boolean"}
OBJECT: Schema = {"type": "object"}
OBJECTS: Schema = {"type": "array", "items": OBJECT}
STRINGS: Schema = {"type": "array", "items": STRING}
ARRAY: Schema = {"type": "array"}


def nullable(schema: Schema) -> Schema:
    """``schema`` or null."""
    return {"anyOf": [schema, {"type": "null"}]}


def answer(required: dict[str, Schema], optional: dict[str, Schema] | None = None) -> Schema:
    """An object with ``required`` fields (plus ``identity``) and ``optional`` ones; others allowed."""
    properties = {**required, **(optional or {}), "identity": nullable(STRING)}
    return {"type": "object", "properties": properties, "required": [*required, "identity"]}


ANY_ANSWER: Schema = answer({})
"""The schema of a tool whose entry names none: an object with its identity."""

MEMORY: Schema = {
    "type": "object",
    "properties": {"id": STRING, "content": STRING, "kind": STRING, "tags": STRINGS, "created_at": STRING},
    "required": ["id", "content", "kind"],
}

MEMORY_STORED = answer(
    {"id": STRING, "created": BOOLEAN, "duplicate": BOOLEAN},
    {"near_duplicate": BOOLEAN, "similarity": NUMBER, "superseded": OBJECT, "merged": OBJECT,
     "possible_updates": OBJECTS, "note": STRING,
     "redacted": {"type": "object", "additionalProperties": STRINGS}},
)
MEMORY_RESULTS = answer({"results": {"type": "array", "items": MEMORY}, "count": INTEGER})
MEMORY_READ = answer({"memory": MEMORY})
MEMORY_DELETED = answer({"deleted": MEMORY})
MEMORY_UNLINKED = answer({"unlinked": OBJECT})
MEMORY_LINKED = answer({"linked": OBJECT}, {"superseded": OBJECT, "unchanged": BOOLEAN, "note": STRING})
MEMORY_UNMERGED = answer({"unmerged": OBJECT, "memory": MEMORY, "created": BOOLEAN}, {"note": STRING})
MEMORY_PAGE = answer(
    {"memories": {"type": "array", "items": MEMORY}, "count": INTEGER, "next_before": nullable(STRING)}
)

CACHE_WRITTEN = answer(
    {"item_id": STRING, "merged": BOOLEAN, "block_id": STRING, "block_status": STRING, "token_count": INTEGER},
    {"items_in_block": INTEGER, "version": INTEGER},
)
CACHE_RESULTS = answer({"results": OBJECTS, "count": INTEGER})
CACHE_BLOCK = answer(
    {"block_id": STRING, "scope": STRING, "status": STRING, "items": OBJECTS},
    {"seq": INTEGER, "summary": nullable(STRING), "token_count": INTEGER, "created_at": STRING,
     "closed_at": nullable(STRING)},
)
CACHE_COMPACTED = answer(
    {"scope": STRING, "closed_block_id": nullable(STRING), "new_block_id": nullable(STRING),
     "summary_generated": BOOLEAN, "items_closed": INTEGER},
)
CACHE_PACK = answer(
    {"scope": STRING, "token_count": INTEGER, "full_tokens": INTEGER, "version": INTEGER, "is_fresh": BOOLEAN},
    {"summary": STRING, "facts": ARRAY, "decisions": ARRAY, "snippets": ARRAY, "warnings": ARRAY,
     "omitted": INTEGER},
)

PLAN_LOOKUP = answer(
    {"hit": BOOLEAN, "answer": {"type": "string", "enum": ["hit", "candidate", "miss"]}},
    {"plan_id": STRING, "actions": OBJECTS, "similarity": NUMBER, "candidates": OBJECTS, "next": STRING},
)
PLAN_PAGE = answer({"plans": OBJECTS, "total": INTEGER, "offset": INTEGER})
PLAN_READ = answer({"plan_id": STRING, "prompt": STRING, "actions": OBJECTS})
PLAN_FORGOTTEN = answer({"plan_id": STRING, "forgotten": BOOLEAN}, {"prompt": STRING})
PLAN_STORED = answer(
    {"plan_id": STRING, "created": BOOLEAN, "overwritten": BOOLEAN, "revived": BOOLEAN, "steps": INTEGER},
    {"score": NUMBER, "redacted": OBJECT},
)
PLAN_REWARDED = answer(
    {"plan_id": STRING, "previous_score": NUMBER, "score": NUMBER, "stale": BOOLEAN},
    {"stale_reason": nullable(STRING)},
)
