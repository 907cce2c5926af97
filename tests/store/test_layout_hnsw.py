"""The layout's HNSW construction settings reach the shard Qdrant Edge creates (its own config file)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from amplifier_module_tool_agent_memory.memory.service import MEMORIES
from amplifier_module_tool_agent_memory.store.contract import CollectionSpec
from amplifier_module_tool_agent_memory.store.edge_settings import edge_config


def _created_hnsw(tmp_path: Path, spec: CollectionSpec) -> dict[str, Any]:
    import qdrant_edge as qe

    shard = qe.EdgeShard.create(str(tmp_path / "shard"), edge_config(spec, 8))
    shard.close()
    config = json.loads((tmp_path / "shard" / "edge_config.json").read_text())
    hnsw: dict[str, Any] = config["vectors"]["dense"]["hnsw_config"]
    assert config["vectors"]["ctx"]["hnsw_config"] == hnsw  # every vector of the collection alike
    return hnsw


def test_the_memory_layout_keeps_qdrants_defaults(tmp_path: Path) -> None:
    hnsw = _created_hnsw(tmp_path, MEMORIES)
    assert (hnsw["m"], hnsw["ef_construct"], hnsw["max_indexing_threads"]) == (16, 100, 0)
    assert hnsw.get("payload_m") is None


def test_a_layouts_hnsw_settings_are_the_shards(tmp_path: Path) -> None:
    layout = replace(MEMORIES.layout, hnsw_m=8, hnsw_ef_construct=64, payload_m=4, indexing_threads=1)
    hnsw = _created_hnsw(tmp_path, replace(MEMORIES, layout=layout))
    assert (hnsw["m"], hnsw["ef_construct"], hnsw["payload_m"], hnsw["max_indexing_threads"]) == (8, 64, 4, 1)
