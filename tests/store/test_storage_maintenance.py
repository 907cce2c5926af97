"""Store maintenance from the CLI: reindex (re-embed with another model) and repair."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from data import DISTINCT_FACTS

from amplifier_module_tool_agent_memory.cli.main import main
from amplifier_module_tool_agent_memory.embeddings import LOCAL_MODEL_ID
from amplifier_module_tool_agent_memory.memory.models import MemorySearchInput, MemoryStoreInput
from amplifier_module_tool_agent_memory.plans.models import PlanStoreInput
from amplifier_module_tool_agent_memory.runtime import AgentMemory


def _written_by_another_model(make_runtime: Callable[..., AgentMemory], root: Path) -> list[str]:
    rt = make_runtime()
    ids = [rt.memory().store(MemoryStoreInput(content=fact)).id for fact in DISTINCT_FACTS[:6]]
    rt.plans().store(
        PlanStoreInput.model_validate(
            {"prompt": "deploy the billing service to staging", "actions": [{"tool": "bash", "args": {"cmd": "make"}}]}
        )
    )
    rt.close()
    # As if another model had written it (a model that is not installed here).
    meta_path = root / "alice" / "store.json"
    meta = json.loads(meta_path.read_text())
    meta["model_id"] = "fastembed:BAAI/not-installed"
    meta_path.write_text(json.dumps(meta))
    return ids


def test_reindex_re_embeds_every_memory_and_plan_with_the_configured_model(
    make_runtime: Callable[..., AgentMemory], root: Path, tmp_path: Path
) -> None:
    ids = _written_by_another_model(make_runtime, root)
    config = tmp_path / "local.json"
    config.write_text(json.dumps({"embeddings": {"provider": "local"}}))

    assert main(["reindex", "--root", str(root), "--identity", "alice", "--config", str(config)]) == 0

    assert json.loads((root / "alice" / "store.json").read_text())["model_id"] == LOCAL_MODEL_ID
    rt = make_runtime()
    assert {record.id for record in rt.memory().export()} == set(ids)
    found = rt.memory().search(MemorySearchInput(query="where are invoices stored?", limit=1))
    assert found[0]["content"] == DISTINCT_FACTS[0]
    assert rt.plans().count() == 1
    assert not (root / ".alice.before-reindex").exists()


def test_a_model_mismatch_names_the_reindex_command(
    make_runtime: Callable[..., AgentMemory], root: Path
) -> None:
    from amplifier_module_tool_agent_memory.errors import ModelMismatchError

    _written_by_another_model(make_runtime, root)
    try:
        make_runtime().memory()
    except ModelMismatchError as exc:
        assert "agent-memory reindex --identity alice --config FILE" in str(exc)
    else:
        raise AssertionError("a store of another model opened")


def test_repair_of_an_intact_store_keeps_everything(
    make_runtime: Callable[..., AgentMemory], root: Path
) -> None:
    rt = make_runtime()
    ids = [rt.memory().store(MemoryStoreInput(content=fact)).id for fact in DISTINCT_FACTS[:5]]
    rt.memory().forget(ids[0])
    rt.close()

    assert main(["repair", "--root", str(root), "--identity", "alice"]) == 0
    assert {record.id for record in make_runtime().memory().export()} == set(ids[1:])
