"""StoredMemory: a memory's payload converts to its record and back unchanged, and what the service
writes is exactly what the record writes (no field added or lost on the way)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from amplifier_module_tool_agent_memory.memory.models import MemoryStoreInput
from amplifier_module_tool_agent_memory.memory.record import (
    SUPERSEDED_BY,
    SUPERSEDES,
    StoredMemory,
    export_record,
    full_view,
    link_payload,
)
from amplifier_module_tool_agent_memory.runtime import AgentMemory

FULL = StoredMemory(
    content="The billing service stores invoices in PostgreSQL 16.",
    ctx_text="previous turn\nThe billing service stores invoices in PostgreSQL 16.\nbilling keeps invoices in pg 16",
    content_hash="ab" * 32,
    created_at="2026-01-10T09:00:00Z",
    updated_at="2026-01-11T09:00:00Z",
    kind="fact",
    tags=["billing", "db"],
    importance=0.8,
    files=["src/billing/db.py"],
    thread="thread-1",
    seq=7,
    supersedes="00000000-0000-4000-8000-000000000001",
    superseded_by="00000000-0000-4000-8000-000000000002",
    restated=["billing keeps invoices in pg 16"],
    restated_meta=[{"tags": ["db"], "importance": 0.5, "files": [], "created_at": "2026-01-11T09:00:00Z"}],
)
BARE = StoredMemory(content="a note", ctx_text="a note", content_hash="cd" * 32,
                    created_at="2026-01-10T09:00:00Z", updated_at="2026-01-10T09:00:00Z")


@pytest.mark.parametrize("memory", [FULL, BARE], ids=["every-field", "no-optional-field"])
def test_a_memory_round_trips_through_its_payload(memory: StoredMemory) -> None:
    payload = memory.to_payload()
    assert StoredMemory.from_payload(payload) == memory
    assert StoredMemory.from_payload(payload).to_payload() == payload


def test_optional_fields_are_written_only_when_set() -> None:
    assert {SUPERSEDES, SUPERSEDED_BY, "restated", "restated_meta"} <= set(FULL.to_payload())
    assert not {SUPERSEDES, SUPERSEDED_BY, "restated", "restated_meta"} & set(BARE.to_payload())


def test_an_update_writes_only_the_fields_it_names_and_refuses_unknown_ones() -> None:
    assert FULL.updated(importance=0.9).payload_of("importance", "updated_at") == {
        "importance": 0.9, "updated_at": "2026-01-11T09:00:00Z"
    }
    assert FULL.importance == 0.8  # the record itself is not changed
    with pytest.raises(KeyError, match="no field"):
        FULL.payload_of("importance", "score")
    assert link_payload(SUPERSEDED_BY, "x") == {SUPERSEDED_BY: "x"}
    with pytest.raises(KeyError):
        link_payload("content", "x")


def test_an_older_payload_reads_with_defaults_and_its_views_show_them() -> None:
    older = {"content": "written by an early version", "created_at": "2025-05-01T00:00:00Z"}
    memory = StoredMemory.from_payload(older)
    assert (memory.kind, memory.tags, memory.importance, memory.ctx_text) == ("note", [], 0.5, older["content"])
    view = full_view("00000000-0000-4000-8000-000000000003", older)
    assert view["kind"] == "note" and view["importance"] == 0.5 and view["files"] == []
    record = export_record("00000000-0000-4000-8000-000000000003", FULL.to_payload())
    assert (record.supersedes, record.restated, record.restated_meta[0].tags) == (
        FULL.supersedes, FULL.restated, ["db"]
    )


def _raw(rt: AgentMemory, memory_id: str) -> dict[str, Any]:
    return dict(rt.memory().coll.retrieve([memory_id])[0].payload or {})


def test_what_memory_store_writes_is_exactly_its_record(make_runtime: Callable[..., AgentMemory]) -> None:
    rt = make_runtime()
    svc = rt.memory()
    first = svc.store(MemoryStoreInput(content="The staging cluster runs in eu-west-1.", kind="fact", tags=["infra"]))
    second = svc.store(MemoryStoreInput(
        content="The staging cluster now runs in eu-central-1.", kind="fact", supersedes=first.id
    ))
    for memory_id in (first.id, second.id):
        raw = _raw(rt, memory_id)
        assert StoredMemory.from_payload(raw).to_payload() == raw
    assert _raw(rt, second.id)[SUPERSEDES] == first.id
    assert _raw(rt, first.id)[SUPERSEDED_BY] == second.id
