"""The ranking of memory_search itself (memory/ranking.py): the recency and importance boost reorders
near-ties and nothing more, a thread neighbour lends a share of its score, and a memory that only
the keywords find (a code, an identifier, another form of a word) is found by the BM25 lists."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from data import DISTINCT_FACTS, T0

from amplifier_module_tool_agent_memory.memory.ranking import RetrievalParams, boost_factor, rerank

PARAMS = RetrievalParams()


def _payload(age_days: float | None = None, importance: float | None = None, **extra: Any) -> dict[str, Any]:
    payload: dict[str, Any] = dict(extra)
    if age_days is not None:
        payload["created_at"] = (T0 - timedelta(days=age_days)).isoformat()
    if importance is not None:
        payload["importance"] = importance
    return payload


def _point(pid: str, score: float, payload: dict[str, Any]) -> SimpleNamespace:
    return SimpleNamespace(id=pid, score=score, payload=payload)


def test_the_recency_boost_halves_every_half_life() -> None:
    fresh = boost_factor(_payload(age_days=0), T0, PARAMS) - 1
    month = boost_factor(_payload(age_days=30), T0, PARAMS) - 1
    two_months = boost_factor(_payload(age_days=60), T0, PARAMS) - 1
    assert fresh == pytest.approx(PARAMS.recency_weight)
    assert month == pytest.approx(fresh / 2) and two_months == pytest.approx(fresh / 4)


def test_updated_at_counts_as_the_age_and_a_future_date_as_now() -> None:
    touched = _payload(age_days=365, updated_at=T0.isoformat())
    assert boost_factor(touched, T0, PARAMS) == pytest.approx(1 + PARAMS.recency_weight)
    future = _payload(age_days=-10)
    assert boost_factor(future, T0, PARAMS) == pytest.approx(1 + PARAMS.recency_weight)


def test_importance_moves_the_score_around_its_neutral_middle() -> None:
    assert boost_factor(_payload(importance=0.5), T0, PARAMS) == 1.0
    assert boost_factor(_payload(importance=1.0), T0, PARAMS) == pytest.approx(1 + PARAMS.importance_weight / 2)
    assert boost_factor(_payload(importance=0.0), T0, PARAMS) == pytest.approx(1 - PARAMS.importance_weight / 2)
    assert boost_factor(_payload(), T0, PARAMS) == 1.0  # neither recorded: no boost
    assert boost_factor({"created_at": "not a date", "importance": "high"}, T0, PARAMS) == 1.0


def test_recency_and_importance_reorder_near_ties_only() -> None:
    points = [
        _point("old", 0.100, _payload(age_days=365, importance=0.5)),
        _point("new", 0.099, _payload(age_days=0, importance=0.5)),
        _point("plain", 0.0995, _payload(age_days=365, importance=0.5)),
        _point("important", 0.0990, _payload(age_days=365, importance=1.0)),
    ]
    order = [h.id for h in rerank(points, 4, T0, PARAMS)]
    assert order == ["important", "new", "old", "plain"]
    # A clear lead is kept whatever the boost, which spans at most (1 + 0.03 + 0.05) / (1 - 0.05) = 1.137:
    # 15% ahead beats fresh and important together; RRF's first and second place are 9% apart (k=10),
    # so among near-ties in every list the boost reorders, a memory first in every list stays first.
    lead = [_point("relevant", 0.115, _payload(age_days=365, importance=0.0)),
            _point("boosted", 0.100, _payload(age_days=0, importance=1.0))]
    assert [h.id for h in rerank(lead, 2, T0, PARAMS)] == ["relevant", "boosted"]


def test_a_thread_neighbour_lends_a_share_of_its_fused_score() -> None:
    points = [
        _point("question", 0.30, _payload(thread="s1", seq=4)),
        _point("answer", 0.10, _payload(thread="s1", seq=5)),  # next to the turn that matched
        _point("stranger", 0.12, _payload(thread="s2", seq=9)),
        _point("far", 0.11, _payload(thread="s1", seq=8)),  # same thread, not adjacent
    ]
    hits = {h.id: h.score for h in rerank(points, 4, T0, PARAMS)}
    assert hits["answer"] == pytest.approx(0.10 + PARAMS.neighbour_alpha * 0.30)
    assert hits["question"] == pytest.approx(0.30 + PARAMS.neighbour_alpha * 0.10)
    assert hits["stranger"] == pytest.approx(0.12) and hits["far"] == pytest.approx(0.11)
    assert [h.id for h in rerank(points, 2, T0, PARAMS)] == ["question", "answer"]


def test_without_propagation_a_neighbour_lends_nothing() -> None:
    points = [_point("a", 0.3, _payload(thread="t", seq=1)), _point("b", 0.1, _payload(thread="t", seq=2))]
    flat = RetrievalParams(neighbour_alpha=0.0)
    assert [(h.id, h.score) for h in rerank(points, 2, T0, flat)] == [("a", 0.3), ("b", 0.1)]


# --- keyword-only matches, through the tool on the real engine and model ---------------------------

KEYWORD_FACTS = (
    "Ticket ZX-4471 tracks the flaky checkout test.",
    "The nightly job was rescheduled after the outage.",
    "Grace deployed the hotfix to the eu-central cluster.",
)


async def _search_ids(call: Any, tools: dict[str, Any], query: str) -> list[str]:
    out = await call(tools["memory_search"], {"query": query, "limit": 5})
    return [r["id"] for r in out["results"]]


async def test_a_code_only_the_keywords_know_finds_its_memory_first(timed_tools: dict[str, Any], call: Any) -> None:
    ids = {}
    for text in (*DISTINCT_FACTS[:12], *KEYWORD_FACTS):
        ids[text] = (await call(timed_tools["memory_store"], {"content": text, "kind": "fact"}))["id"]
    # Nothing but the identifier ties these queries to their memory; the embedding reads them as noise.
    assert (await _search_ids(call, timed_tools, "ZX-4471"))[0] == ids[KEYWORD_FACTS[0]]
    assert (await _search_ids(call, timed_tools, "what about zx-4471?"))[0] == ids[KEYWORD_FACTS[0]]


@pytest.mark.edge_only("qdrant-client's local mode (the server's stand-in) does not stem its BM25 text index")
async def test_another_form_of_a_keyword_finds_its_memory_first(timed_tools: dict[str, Any], call: Any) -> None:
    ids = {}
    for text in (*DISTINCT_FACTS[:12], *KEYWORD_FACTS):
        ids[text] = (await call(timed_tools["memory_store"], {"content": text, "kind": "fact"}))["id"]
    # Another form of the word: the BM25 fields are stemmed ("deploying" -> "deploy").
    assert (await _search_ids(call, timed_tools, "who is deploying hotfixes"))[0] == ids[KEYWORD_FACTS[2]]
