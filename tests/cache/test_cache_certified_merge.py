"""Working-memory cache: an item merges only when certified the same, else both stay (issue 16).

A merge keeps one text and drops the other, an action the agent neither sees nor undoes, so it rests on
``compare.certify`` (the same words and values in the same places, articles, case and punctuation
aside); a restatement in other words or a synonym in place is kept beside the first item, and a
changed value still replaces the older. Real engine, real model; none of these texts is in the shared
data files.
"""

from __future__ import annotations

from collections.abc import Callable

from cache_helpers import cache_service, note, pack, packed_texts
from memory_helpers import ManualClock

from amplifier_module_tool_agent_memory.runtime import AgentMemory

ROTATION = "The staging database password rotates every 30 days."
ROTATION_TRIVIAL = "the staging database password rotates every 30 days!"
ROTATION_REWORDED = "Every 30 days, the password of the staging database is rotated."
ROTATION_CHANGED = "The staging database password rotates every 60 days."
RESTART = "The build server restarts every Sunday night."
RESTART_SYNONYM = "The build machine restarts every Sunday night."


def test_a_certified_restatement_merges(make_runtime: Callable[..., AgentMemory]) -> None:
    svc = cache_service(make_runtime, ManualClock())
    first = note(svc, ROTATION)
    again = note(svc, ROTATION_TRIVIAL)
    assert (again["merged"], again["item_id"]) == (True, first["item_id"])
    assert packed_texts(pack(svc)) == [ROTATION]


def test_a_reworded_restatement_is_not_certified_and_both_stay(make_runtime: Callable[..., AgentMemory]) -> None:
    svc = cache_service(make_runtime, ManualClock())
    first = note(svc, ROTATION)
    again = note(svc, ROTATION_REWORDED)
    assert again["merged"] is False and again["item_id"] != first["item_id"] and "superseded" not in again
    assert sorted(packed_texts(pack(svc))) == sorted([ROTATION, ROTATION_REWORDED])


def test_a_synonym_in_place_is_not_certified_and_both_stay(make_runtime: Callable[..., AgentMemory]) -> None:
    svc = cache_service(make_runtime, ManualClock())
    note(svc, RESTART)
    again = note(svc, RESTART_SYNONYM)
    assert again["merged"] is False and "superseded" not in again
    assert sorted(packed_texts(pack(svc))) == sorted([RESTART, RESTART_SYNONYM])


def test_a_changed_value_still_replaces_the_older(make_runtime: Callable[..., AgentMemory]) -> None:
    svc = cache_service(make_runtime, ManualClock())
    first = note(svc, ROTATION)
    new = note(svc, ROTATION_CHANGED)
    assert new["merged"] is False
    assert (new["superseded"]["item_id"], new["superseded"]["content"]) == (first["item_id"], ROTATION)
    assert packed_texts(pack(svc)) == [ROTATION_CHANGED]
