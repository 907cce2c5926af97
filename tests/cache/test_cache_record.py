"""CacheItem and CacheBlock: each payload converts to its record and back unchanged, and what the cache
service writes is exactly what its records write."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from amplifier_module_tool_agent_memory.cache.models import CacheBlock, CacheItem, CacheWriteInput
from amplifier_module_tool_agent_memory.runtime import AgentMemory

T0 = datetime(2026, 1, 10, 9, 0, tzinfo=UTC)
ITEM = CacheItem(
    id="00000000-0000-4000-8000-000000000011", scope="task:1", block_id="00000000-0000-4000-8000-000000000012",
    kind="fact", content="totals are computed in cents", importance=0.7, file_ref="src/invoice.ts",
    created_at=T0, updated_at=T0, ttl_minutes=30, ttl_expires_at=T0 + timedelta(minutes=30), version=3, tokens=6,
    session="s1",
)
BLOCK = CacheBlock(
    id="00000000-0000-4000-8000-000000000012", scope="task:1", seq=2, status="closed", token_count=120,
    created_at=T0, closed_at=T0 + timedelta(hours=1), summary_lines=[("a", "line a")], summary_text="line a",
    summary_source="extractive", closed_items=4, version=9,
)


@pytest.mark.parametrize("record", [ITEM, ITEM.model_copy(update={"ttl_expires_at": None, "file_ref": None}), BLOCK],
                         ids=["item", "item-without-expiry", "block"])
def test_a_cache_record_round_trips_through_its_payload(record: CacheItem | CacheBlock) -> None:
    payload = record.payload()
    assert "id" not in payload
    back = type(record).model_validate({**payload, "id": record.id})
    assert back == record and back.payload() == payload


def test_an_update_writes_only_the_fields_it_names() -> None:
    assert ITEM.payload_of("access_count", "ttl_expires_at") == {
        "access_count": 0, "ttl_expires_at": "2026-01-10T09:30:00.000000Z"
    }
    # A field that is unset is left out (the write does not store a null).
    assert ITEM.model_copy(update={"ttl_expires_at": None}).payload_of("access_count", "ttl_expires_at") == {
        "access_count": 0
    }
    with pytest.raises(KeyError, match="no field"):
        BLOCK.payload_of("version", "uses")


def test_what_cache_write_stores_is_exactly_its_records(make_runtime: Callable[..., AgentMemory]) -> None:
    svc = make_runtime().cache()
    out = svc.write(CacheWriteInput(kind="fact", content="the invoice total is rounded once", scope="task:1"))
    (item_raw,) = [r.payload or {} for r in svc.coll.retrieve([out["item_id"]])]
    (block_raw,) = [r.payload or {} for r in svc.coll.retrieve([out["block_id"]])]
    assert CacheItem.model_validate({**item_raw, "id": out["item_id"]}).payload() == item_raw
    assert CacheBlock.model_validate({**block_raw, "id": out["block_id"]}).payload() == block_raw
