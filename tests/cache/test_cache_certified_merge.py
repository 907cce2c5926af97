"""Working-memory cache: an item merges only when certified the same, else both stay (issue 16).

A merge keeps one text and drops the other, an action the agent neither sees nor undoes, so it rests on
``compare.certify`` (the same words and values in the same places, articles, case and punctuation
aside); a restatement in other words or a synonym in place is kept beside the first item, and a
changed value still replaces the older. Real engine, real model; none of these texts is in the shared
data files.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from amplifier_module_tool_agent_memory.runtime import AgentMemory

ROTATION = "The staging database password rotates every 30 days."
ROTATION_TRIVIAL = "the staging database password rotates every 30 days!"
ROTATION_REWORDED = "Every 30 days, the password of the staging database is rotated."
ROTATION_CHANGED = "The staging database password rotates every 60 days."
RESTART = "The build server restarts every Sunday night."
RESTART_SYNONYM = "The build machine restarts every Sunday night."


def test_a_certified_restatement_merges(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    svc = make_cache(clock=make_clock())
    first = svc.note(ROTATION)
    again = svc.note(ROTATION_TRIVIAL)
    assert (again["merged"], again["item_id"]) == (True, first["item_id"])
    assert svc.packed_texts() == [ROTATION]


def test_a_reworded_restatement_is_not_certified_and_both_stay(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    svc = make_cache(clock=make_clock())
    first = svc.note(ROTATION)
    again = svc.note(ROTATION_REWORDED)
    assert again["merged"] is False and again["item_id"] != first["item_id"] and "superseded" not in again
    assert sorted(svc.packed_texts()) == sorted([ROTATION, ROTATION_REWORDED])


def test_a_synonym_in_place_is_not_certified_and_both_stay(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    svc = make_cache(clock=make_clock())
    svc.note(RESTART)
    again = svc.note(RESTART_SYNONYM)
    assert again["merged"] is False and "superseded" not in again
    assert sorted(svc.packed_texts()) == sorted([RESTART, RESTART_SYNONYM])


def test_a_changed_value_still_replaces_the_older(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    svc = make_cache(clock=make_clock())
    first = svc.note(ROTATION)
    new = svc.note(ROTATION_CHANGED)
    assert new["merged"] is False
    assert (new["superseded"]["item_id"], new["superseded"]["content"]) == (first["item_id"], ROTATION)
    assert svc.packed_texts() == [ROTATION_CHANGED]
