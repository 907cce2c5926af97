"""``agent-memory plans list|show|forget``: see the cached plans and delete a bad one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from amplifier_module_tool_agent_memory.cli.main import main
from amplifier_module_tool_agent_memory.config import parse_config
from amplifier_module_tool_agent_memory.embeddings.providers import CachedEmbedder
from amplifier_module_tool_agent_memory.identity import ResolvedIdentity
from amplifier_module_tool_agent_memory.plans.models import PlanStoreInput
from amplifier_module_tool_agent_memory.plans.service import plan_id_for
from amplifier_module_tool_agent_memory.runtime import AgentMemory

DEPLOY = "Deploy the API to staging"
ROTATE = "Rotate the staging database password"


def _store(root: Path, *prompts: str) -> list[str]:
    rt = AgentMemory(parse_config({"storage_root": str(root)}), ResolvedIdentity("alice", "config"))
    try:
        actions = [{"tool": "bash", "args": {"command": "make deploy"}}]
        inputs = [PlanStoreInput.model_validate({"prompt": p, "actions": actions}) for p in prompts]
        return [rt.plans().store(inp).plan_id for inp in inputs]
    finally:
        rt.close()


def _run(root: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main([*argv, "--root", str(root), "--identity", "alice"])
    out, err = capsys.readouterr()
    return code, out, err


def test_plans_are_listed_shown_and_forgotten(
    root: Path, embedder: CachedEmbedder, capsys: pytest.CaptureFixture[str]
) -> None:
    deploy, rotate = _store(root, DEPLOY, ROTATE)
    code, out, _ = _run(root, capsys, "plans", "list", "--json")
    listed = json.loads(out)
    assert code == 0 and listed["total"] == 2
    assert {p["plan_id"] for p in listed["plans"]} == {deploy, rotate}
    code, out, _ = _run(root, capsys, "plans", "list", "--contains", "password")
    assert code == 0 and rotate in out and deploy not in out
    code, out, _ = _run(root, capsys, "plans", "show", deploy, "--json")
    assert code == 0 and json.loads(out)["plans"][0]["prompt"] == DEPLOY
    code, out, _ = _run(root, capsys, "plans", "forget", deploy)
    assert code == 0 and f"forgot {deploy}" in out
    code, out, err = _run(root, capsys, "plans", "forget", deploy, "--json")
    assert code == 1 and json.loads(out)["not_found"] == [deploy] and "no plan with id" in err
    code, out, _ = _run(root, capsys, "plans", "list", "--json")
    assert [p["plan_id"] for p in json.loads(out)["plans"]] == [rotate]


def test_a_bad_plan_id_is_a_usage_error(
    root: Path, embedder: CachedEmbedder, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(root, capsys, "plans", "show", "not-a-uuid")
    assert code == 2 and err.strip()
    code, _, err = _run(root, capsys, "plans", "forget")
    assert code == 2 and "needs at least one plan id" in err
    assert plan_id_for(DEPLOY)  # ids are stable: the same prompt, the same id


def test_plans_travel_with_export_and_import(
    root: Path, embedder: CachedEmbedder, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    deploy, rotate = _store(root, DEPLOY, ROTATE)
    dump = tmp_path / "alice.jsonl"
    code, out, _ = _run(root, capsys, "export", "--out", str(dump), "--json")
    assert code == 0 and json.loads(out)["plans"] == 2
    lines = [json.loads(line) for line in dump.read_text().splitlines()]
    assert {line["plan_id"] for line in lines if line.get("record") == "plan"} == {deploy, rotate}
    code = main(["import", str(dump), "--root", str(root), "--identity", "bob", "--json"])
    out, _ = capsys.readouterr()
    assert code == 0 and json.loads(out)["plans"] == 2
    code = main(["plans", "show", deploy, "--root", str(root), "--identity", "bob", "--json"])
    shown = json.loads(capsys.readouterr()[0])["plans"][0]
    assert (shown["prompt"], shown["actions"]) == (DEPLOY, [{"tool": "bash", "args": {"command": "make deploy"}}])
    dump.write_text(dump.read_text() + json.dumps({"record": "plan", "plan_id": deploy, "prompt": ""}) + "\n")
    code, _, err = _run(root, capsys, "import", str(dump))
    assert code == 2 and "nothing was imported" in err
