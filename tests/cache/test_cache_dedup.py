"""Semantic dedup on write: a near-identical live item of the same kind in the same scope absorbs the write."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from amplifier_module_tool_agent_memory.cache.service import CacheService

JWT = "The auth service signs its JWT tokens with RS256."
JWT_AGAIN = "The auth service signs its JWT tokens with RS256!"


def test_near_identical_item_of_the_same_kind_is_merged(make_cache: Callable[..., CacheService]) -> None:
    svc = make_cache()
    first = svc.note(JWT, importance=0.5)
    second = svc.note(JWT_AGAIN)
    assert second["merged"] is True and second["item_id"] == first["item_id"]
    assert second["similarity"] >= 0.92
    item = svc.get(first["block_id"])["items"][0]
    assert item["importance"] == 0.6
    assert item["access_count"] == 2  # one for the merge, one for this read
    assert svc.packed_texts() == [JWT]


def test_merge_caps_importance_at_one(make_cache: Callable[..., CacheService]) -> None:
    svc = make_cache()
    first = svc.note(JWT, importance=0.95)
    svc.note(JWT_AGAIN)
    assert svc.get(first["block_id"])["items"][0]["importance"] == 1.0


def test_merge_refreshes_the_ttl(make_cache: Callable[..., CacheService], clock: Any) -> None:
    svc = make_cache()
    svc.note(JWT)
    clock.advance(minutes=25)
    svc.note(JWT_AGAIN)
    clock.advance(minutes=25)  # 50 minutes after the first write, 25 after the merge
    assert svc.packed_texts() == [JWT]


def test_merge_bumps_the_item_into_a_delta_pack(make_cache: Callable[..., CacheService]) -> None:
    svc = make_cache()
    svc.note(JWT)
    version = svc.pack()["version"]
    svc.note(JWT_AGAIN)
    assert svc.packed_texts(since_version=version) == [JWT]


def test_same_content_of_another_kind_is_not_merged(make_cache: Callable[..., CacheService]) -> None:
    svc = make_cache()
    first = svc.note(JWT, "fact")
    second = svc.note(JWT, "warning")
    assert second["merged"] is False and second["item_id"] != first["item_id"]


def test_same_content_in_another_scope_is_not_merged(make_cache: Callable[..., CacheService]) -> None:
    svc = make_cache()
    first = svc.note(JWT, scope="task:a")
    second = svc.note(JWT, scope="task:b")
    assert second["merged"] is False and second["item_id"] != first["item_id"]


def test_expired_item_does_not_absorb_a_new_write(
    make_cache: Callable[..., CacheService], clock: Any
) -> None:
    svc = make_cache()
    first = svc.note(JWT, ttl_minutes=1)
    clock.advance(minutes=2)
    second = svc.note(JWT)
    assert second["merged"] is False and second["item_id"] != first["item_id"]


def test_related_but_different_items_are_kept_apart(make_cache: Callable[..., CacheService]) -> None:
    svc = make_cache()
    svc.note(JWT)
    other = svc.note("The auth service stores refresh tokens in Redis for 7 days.")
    assert other["merged"] is False
