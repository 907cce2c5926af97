"""Secret probe: which of the kinds a user's memory or a plan's arguments carry survive redaction, and where.

The kinds and surroundings are the tests' data (``tests/secret_kinds.py``: 50 kinds, each in 7
surroundings: the start of a note, mid-sentence, JSON, YAML, ``.env``, a shell command, a plan's
arguments). For each kind it prints in how many surroundings a secret survives:

- ``redact``: the text through ``redact``; ``json``: the text as a plan argument through ``redact_json``;
- with ``--tools``: every case stored through the real tools (memory_store, cache_write, plan_store) on a
  real store in a temporary folder, then read back (memory_get, memory_search, cache_pack, plan_lookup),
  exported, and every byte of the journal and engine files scanned.

``--base REV`` runs the ``redact``/``json`` columns with the redaction module of git revision REV too,
side by side in the same run. Run: ``python benchmarks/secret_probe.py [--base main] [--tools]``.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import subprocess
import sys
import tempfile
import types
from collections import Counter
from pathlib import Path
from typing import Any

from _common import REPO, print_table

sys.path.insert(0, str(REPO / "tests"))

from secret_kinds import CASES, KINDS, SURROUNDINGS, Case, leaked

from amplifier_module_tool_agent_memory import redaction

MODULE = "modules/tool-agent-memory/amplifier_module_tool_agent_memory/redaction.py"


def redaction_at(rev: str) -> types.ModuleType:
    """The redaction module as it is at git revision ``rev`` (it imports nothing from the package)."""
    source = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:{MODULE}"], check=True,
                            capture_output=True, text=True).stdout
    folder = Path(tempfile.mkdtemp(prefix="secret-probe-"))
    (folder / "redaction_base.py").write_text(source)
    spec = importlib.util.spec_from_file_location("redaction_base", folder / "redaction_base.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["redaction_base"] = module
    spec.loader.exec_module(module)
    return module


def text_survivors(module: Any) -> tuple[Counter[str], Counter[str]]:
    """kind -> surroundings in which a secret survives ``redact`` / ``redact_json``."""
    plain: Counter[str] = Counter()
    as_json: Counter[str] = Counter()
    for case in CASES:
        cleaned, _ = module.redact(case.text)
        plain[case.kind] += any(s in cleaned for s in case.secrets)
        arg = json.dumps(module.redact_json({"command": case.text}, []))
        as_json[case.kind] += any(s in arg for s in case.secrets)
    return plain, as_json


def tool_survivors(folder: Path) -> tuple[Counter[str], Counter[str]]:
    """kind -> cases whose secret survives in a tool's answer / in the store's files or the export."""
    answers = asyncio.run(_answers(folder))
    from amplifier_module_tool_agent_memory.cli.main import main as cli_main

    cli_main(["export", "--root", str(folder), "--identity", "probe", "--out", str(folder / "export.jsonl")])
    stored = b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file()).decode("utf-8", "replace")
    return answers, Counter(leaked(stored))


async def _answers(folder: Path) -> Counter[str]:
    from amplifier_module_tool_agent_memory.amplifier.tools import build_tools
    from amplifier_module_tool_agent_memory.config import parse_config
    from amplifier_module_tool_agent_memory.identity import ResolvedIdentity
    from amplifier_module_tool_agent_memory.runtime import AgentMemory

    answers: Counter[str] = Counter()
    rt = AgentMemory(parse_config({"storage_root": str(folder)}), ResolvedIdentity("probe", "config"))
    tools = {tool.name: tool for tool in build_tools(rt)}
    for n, case in enumerate(CASES):
        outputs = await _through_tools(tools, case, n)
        answers.update(set(leaked(json.dumps(outputs, default=str))) & {case.kind})
    rt.close()
    return answers


async def _through_tools(tools: dict[str, Any], case: Case, n: int) -> list[Any]:
    plan = {"prompt": f"task {n}: {case.kind} with {case.text}"[:2000],
            "actions": [{"tool": "bash", "args": {"command": case.text}}]}
    memory = (await tools["memory_store"].execute({"content": f"note {n}: {case.text}"})).output
    item = (await tools["cache_write"].execute({"kind": "snippet", "content": case.text, "scope": f"s{n % 7}"})).output
    stored = (await tools["plan_store"].execute(plan)).output
    out: list[Any] = [memory, item, stored]
    if isinstance(memory, dict) and "id" in memory:
        out.append((await tools["memory_get"].execute({"id": memory["id"]})).output)
    out.append((await tools["memory_search"].execute({"query": case.text[:400]})).output)
    out.append((await tools["cache_pack"].execute({"scope": f"s{n % 7}", "token_budget": 8000})).output)
    out.append((await tools["plan_lookup"].execute({"prompt": plan["prompt"]})).output)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="also probe the redaction module of this git revision, side by side")
    parser.add_argument("--tools", action="store_true", help="also run every case through the real tools and store")
    args = parser.parse_args()

    columns: list[tuple[str, Counter[str]]] = []
    if args.base:
        base_plain, base_json = text_survivors(redaction_at(args.base))
        columns += [(f"redact@{args.base}", base_plain), (f"json@{args.base}", base_json)]
    plain, as_json = text_survivors(redaction)
    columns += [("redact", plain), ("json", as_json)]
    if args.tools:
        with tempfile.TemporaryDirectory(prefix="secret-probe-") as tmp:
            answers, files = tool_survivors(Path(tmp))
        columns += [("tool answers", answers), ("files+export (kinds)", files)]

    print(f"Secret probe: {len(KINDS)} kinds x {len(SURROUNDINGS)} surroundings ({', '.join(SURROUNDINGS)}); "
          "cells are the surroundings in which a secret of the kind survived")
    rows = [(kind.name, *(column[kind.name] for _, column in columns)) for kind in KINDS]
    print_table(("kind", *(name for name, _ in columns)), rows)
    print("\nkinds with any survivor: " + ", ".join(
        f"{name} {sum(1 for k in KINDS if column[k.name])} of {len(KINDS)}" for name, column in columns
    ))
    return 0


if __name__ == "__main__":
    sys.exit(main())
