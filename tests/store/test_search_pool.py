"""The embedded store's search pool size (storage.search_threads): applied at every open, results unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from amplifier_module_tool_agent_memory.config import parse_config
from amplifier_module_tool_agent_memory.embeddings.providers import CachedEmbedder
from amplifier_module_tool_agent_memory.errors import ConfigError
from amplifier_module_tool_agent_memory.identity import ResolvedIdentity
from amplifier_module_tool_agent_memory.memory.models import MemorySearchInput, MemoryStoreInput
from amplifier_module_tool_agent_memory.runtime import AgentMemory
from amplifier_module_tool_agent_memory.store.edge_settings import SEARCH_THREADS

FACTS = [
    "The staging cluster runs in eu-west-1.",
    "Billing invoices are sent on the first of the month.",
    "Dana prefers short answers with code first.",
    "We decided to keep the journal as the store's log.",
    "The hiking trail was muddy after the storm.",
    "Releases are cut on Thursdays after the demo.",
    "The on-call rotation changes every Monday at nine.",
    "Production logs are kept for thirty days.",
]


def open_runtime(root: Path, **storage: Any) -> AgentMemory:
    cfg = parse_config({"storage_root": str(root), "storage": storage})
    return AgentMemory(cfg, ResolvedIdentity("alice", "config"))


def persisted_pool(root: Path) -> object:
    settings = json.loads((root / "alice" / "memories" / "edge_config.json").read_text())
    return settings.get("max_search_threads", "Edge's own")


def search(rt: AgentMemory, query: str) -> list[tuple[Any, float]]:
    return [(hit["id"], round(hit["score"], 6)) for hit in rt.memory().search(MemorySearchInput(query=query))]


def test_every_open_applies_the_search_pool_setting(root: Path, embedder: CachedEmbedder) -> None:
    rt = open_runtime(root)
    rt.memory().store(MemoryStoreInput(content=FACTS[0]))
    rt.close()
    assert persisted_pool(root) == SEARCH_THREADS

    # An existing store whose shards persisted another pool size (Edge's own, as every store before the
    # setting did) opens with the current setting.
    for setting, persisted in ((0, "Edge's own"), (2, 2), (None, SEARCH_THREADS)):
        rt = open_runtime(root) if setting is None else open_runtime(root, search_threads=setting)
        assert len(search(rt, "staging cluster")) == 1
        rt.close()
        assert persisted_pool(root) == persisted, setting


def test_the_pool_size_does_not_change_results(root: Path, embedder: CachedEmbedder) -> None:
    rt = open_runtime(root)
    for fact in FACTS:
        rt.memory().store(MemoryStoreInput(content=fact))
    rt.close()
    answers = {}
    for setting in (1, 0):
        rt = open_runtime(root, search_threads=setting)
        answers[setting] = [search(rt, query) for query in ("where does staging run", "what did we decide", "muddy")]
        rt.close()
    assert answers[1] == answers[0]
    assert all(answers[1])


def test_a_pool_size_out_of_range_is_refused() -> None:
    for bad in (-1, 65):
        with pytest.raises(ConfigError, match="search_threads"):
            parse_config({"storage": {"search_threads": bad}})
