"""Recall's candidate depth: its fused query reads fewer candidates than memory_search, which keeps its own, and at
that depth brings the whole payloads and vectors recall needs itself (no second read)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from amplifier_module_tool_agent_memory.config import RecallConfig
from amplifier_module_tool_agent_memory.memory.models import MemoryRecord, MemorySearchInput
from amplifier_module_tool_agent_memory.memory.ranking import Hit, RetrievalParams
from amplifier_module_tool_agent_memory.memory.recall import _DEPTH, CANDIDATES, Recaller
from amplifier_module_tool_agent_memory.runtime import AgentMemory
from amplifier_module_tool_agent_memory.store.query import Bm25, Fused, Search

# More memories matching the prompt than recall's depth, fewer than memory_search's; one named differently each.
SERVICES = (
    "billing",
    "search",
    "payments",
    "invoices",
    "mailer",
    "gateway",
    "ledger",
    "reports",
    "exports",
    "imports",
    "auth",
    "profiles",
    "catalog",
    "orders",
    "shipping",
    "returns",
    "pricing",
    "coupons",
    "reviews",
    "media",
    "thumbnails",
    "webhooks",
    "scheduler",
    "archive",
    "metrics",
    "alerts",
    "backups",
    "tenants",
    "quotas",
    "audit",
)


def _depths(request: Search) -> tuple[int, list[int]]:
    assert isinstance(request.query, Fused)
    return request.limit, [stage.limit for stage in request.query.stages]


def test_recall_reads_its_own_depth_and_memory_search_keeps_fifty(
    make_runtime: Callable[..., AgentMemory], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert CANDIDATES <= _DEPTH < RetrievalParams().candidates
    svc = make_runtime().memory()
    texts = [
        f"The deploy of the {name} service runs every Friday at {i % 12 + 1} pm." for i, name in enumerate(SERVICES)
    ]
    records = [
        MemoryRecord(
            id=str(uuid.uuid5(uuid.NAMESPACE_URL, t)), content=t, kind="fact", created_at="2026-01-10T12:00:00Z"
        )
        for t in texts
    ]
    svc.import_records(records)
    requests: list[Search] = []
    answers: list[int] = []
    query = svc.coll.query

    def spy(request: Search) -> Any:
        requests.append(request)
        points = query(request)
        answers.append(len(points))
        return points

    reads: list[list[str]] = []
    retrieve = svc.coll.retrieve
    monkeypatch.setattr(svc.coll, "query", spy)
    monkeypatch.setattr(svc.coll, "retrieve", lambda ids, **kw: reads.append(list(ids)) or retrieve(ids, **kw))
    hits, matches, _ = Recaller(svc, RecallConfig()).candidates("When does the deploy of the reports service run?")
    assert _depths(requests[0]) == (_DEPTH, [_DEPTH] * 4)
    assert requests[0].with_payload is True and requests[0].with_vector == ("dense",)
    assert answers[0] == _DEPTH  # every memory matches: the engine stopped at recall's depth
    assert reads == []  # the query brought everything
    assert len(hits) == len(matches) == CANDIDATES
    assert hits[0].payload["content"] == texts[7] and hits[0].payload["kind"] == "fact"  # whole payloads
    assert matches[0][1] > 0.5  # the cosine of the prompt and the memory it names, from the query's vector

    found = svc.search(MemorySearchInput(query="When does the deploy of the reports service run?", limit=5))
    params = RetrievalParams()
    assert _depths(requests[1]) == (params.candidates, [params.prefetch_limit] * 4)
    assert answers[1] == len(SERVICES)  # memory_search still reads every candidate up to its 50
    assert found[0]["content"] == texts[7]


def test_a_candidate_the_query_did_not_bring_is_read(make_runtime: Callable[..., AgentMemory]) -> None:
    # A chain's newest memory that the search did not return joins the candidates without a vector: it is read.
    svc = make_runtime().memory()
    texts = [f"The deploy of the {name} service runs every Friday." for name in SERVICES[:3]]
    svc.import_records(
        [
            MemoryRecord(
                id=str(uuid.uuid5(uuid.NAMESPACE_URL, t)), content=t, kind="fact", created_at="2026-01-10T12:00:00Z"
            )
            for t in texts
        ]
    )
    recaller = Recaller(svc, RecallConfig())
    vec = svc.embedder.embed_query("deploy of the billing service")
    points = {
        str(p.id): p
        for p in svc.coll.retrieve([str(uuid.uuid5(uuid.NAMESPACE_URL, t)) for t in texts], with_vector=("dense",))
    }
    ranked = [Hit(i, 1.0, {}) for i in points]
    everything = recaller._read(vec, ranked, points)
    first = next(iter(points))
    assert recaller._read(vec, ranked, {i: p for i, p in points.items() if i != first}) == everything
    assert [h.payload["content"] for h in everything[0]] == texts and len(everything[1]) == 3


def test_recalls_keyword_stages_search_the_prompts_first_words_and_memory_search_the_whole_query(
    make_runtime: Callable[..., AgentMemory], monkeypatch: pytest.MonkeyPatch
) -> None:
    svc = make_runtime().memory()
    svc.import_records(
        [
            MemoryRecord(
                id=str(uuid.uuid5(uuid.NAMESPACE_URL, "deploy")),
                kind="fact",
                content="The deploy of the reports service runs every Friday.",
                created_at="2026-01-10T12:00:00Z",
            )
        ]
    )
    requests: list[Search] = []
    query = svc.coll.query
    monkeypatch.setattr(svc.coll, "query", lambda request: requests.append(request) or query(request))
    question = "When does the deploy of the reports service run on a normal week?"  # 13 words
    padding = " ".join(f"and the {name} service too?" for name in SERVICES[:8])  # 40 words
    prompt = f"{question} {padding}"
    hits, _, _ = Recaller(svc, RecallConfig()).candidates(prompt)
    svc.search(MemorySearchInput(query=prompt, limit=5))

    def keyword_texts(request: Search) -> list[str]:
        assert isinstance(request.query, Fused)
        return [stage.query.text for stage in request.query.stages if isinstance(stage.query, Bm25)]

    first_16 = " ".join(prompt.split()[:16])
    assert keyword_texts(requests[0]) == [first_16, first_16]  # recall: the first 16 words, not the padding
    assert keyword_texts(requests[1]) == [prompt, prompt]  # memory_search: the whole query
    assert hits[0].payload["content"].startswith("The deploy of the reports service")
