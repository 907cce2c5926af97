"""Our own secret probe: every kind in ``secret_kinds.KINDS`` (50 kinds a user's memory or a plan's
arguments really carry), in every surrounding, must not survive anywhere: not in ``redact`` or
``redact_json``, not in any tool's answer (memory, cache, plans), events, logs, the CLI's output or an
export, and not in the journal's or the engine's files. ``benchmarks/secret_probe.py`` prints the same
probe as a table, kind by kind and place by place."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from secret_kinds import CASES, KINDS, SURROUNDINGS, Case, leaked

from amplifier_module_tool_agent_memory.cli.main import main as cli_main
from amplifier_module_tool_agent_memory.redaction import redact, redact_json
from amplifier_module_tool_agent_memory.runtime import AgentMemory

if TYPE_CHECKING:
    from conftest import SecretProbe

IDS = [f"{c.kind}-{c.surrounding}" for c in CASES]


def test_the_probe_has_at_least_35_distinct_kinds_each_in_every_surrounding() -> None:
    assert len({k.name for k in KINDS}) == len(KINDS) >= 35
    assert len(CASES) == len(KINDS) * len(SURROUNDINGS)
    secrets = [s for k in KINDS for s in k.secrets]
    assert len(set(secrets)) == len(secrets) and min(map(len, secrets)) >= 10
    # Each kind's text really holds its secrets (a generator slip would make the probe pass vacuously).
    assert all(s in k.text for k in KINDS for s in k.secrets)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_redact_leaves_no_secret_of_the_kind(case: Case) -> None:
    cleaned, found = redact(case.text)
    assert not [s for s in case.secrets if s in cleaned], cleaned
    assert found
    assert redact(cleaned) == (cleaned, [])


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_redact_json_leaves_no_secret_in_a_plan_argument(case: Case) -> None:
    found: list[str] = []
    cleaned = json.dumps(redact_json({"command": case.text, "steps": [{"script": case.text}]}, found))
    assert not [s for s in case.secrets if s in cleaned]
    assert found


# ---------------------------------------------------------------------------------------
# End to end: each kind once, the surroundings taken in turn, through every tool that stores text.

SPREAD: tuple[Case, ...] = tuple(
    CASES[i * len(SURROUNDINGS) + i % len(SURROUNDINGS)] for i in range(len(KINDS))
)


@pytest.mark.reliability
async def test_no_kind_survives_in_answers_files_export_cli_or_logs(
    make_runtime: Callable[..., AgentMemory], root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture, secret_probe: SecretProbe, call: Any, runtime_tools: Any,
) -> None:
    caplog.set_level(logging.DEBUG)
    control = "ordinary-control-marker-Kq7Wz"
    rt = make_runtime()
    tools = runtime_tools(rt)
    answers: list[Any] = []
    for n, case in enumerate(SPREAD):
        ids = await secret_probe.store(tools, case.text, n)
        answers.append(ids)
        answers.append(await call(tools["memory_get"], {"id": ids["memory"]["id"]}))
        answers.append(await call(tools["memory_search"], {"query": case.text[:400]}))
        answers.append(await call(tools["plan_lookup"], {"prompt": secret_probe.plan(case.text, n)["prompt"]}))
        # A failing call carrying the secret in a field that breaks a rule: its error and its log line.
        answers.append((await tools["memory_search"].execute({"query": case.text, "since": case.text})).error)
    for scope in range(4):
        answers.append(await call(tools["cache_pack"], {"scope": f"task:{scope}", "token_budget": 8000}))
    answers.append(await call(tools["memory_list"], {"limit": 100}))
    await call(tools["memory_store"], {"content": f"a plain note: {control}"})
    assert not leaked(json.dumps(answers, default=str))
    rt.close()

    files = secret_probe.stored_text(root)
    assert control in files  # the scan reads stored text at all
    assert not leaked(files)

    out = tmp_path / "export.jsonl"
    assert cli_main(["export", "--root", str(root), "--identity", "alice", "--out", str(out)]) == 0
    capsys.readouterr()
    for case in SPREAD[::5]:
        assert cli_main(["store", case.text, "--root", str(root), "--identity", "alice", "--json"]) == 0
    assert cli_main(["list", "--limit", "100", "--root", str(root), "--identity", "alice", "--json"]) == 0
    printed = capsys.readouterr().out
    assert "[REDACTED:" in printed
    assert not leaked(out.read_text() + printed)
    assert not leaked(" ".join(f"{r.getMessage()} {r.__dict__}" for r in caplog.records))


@pytest.mark.reliability
async def test_no_kind_survives_in_events(
    recorded_events: tuple[dict[str, Any], list[dict[str, Any]]], secret_probe: SecretProbe
) -> None:
    tools, seen = recorded_events
    for n, case in enumerate(SPREAD[::2]):
        await secret_probe.store(tools, case.text, n)
        await tools["plan_lookup"].execute({"prompt": case.text[:2000]})
    assert len({e["event"] for e in seen}) >= 3
    assert not leaked(json.dumps(seen, default=str))
