"""``agent-memory demo``: the module in a real Amplifier session, driven as an agent would.

It builds an amplifier-core ``AmplifierSession`` (no LLM, no orchestrator initialised),
lets amplifier-core's ``ModuleLoader`` find the installed entry point ``tool-agent-memory``,
mounts it, then calls the tools: store memories (one with a secret, one exact
duplicate), search them, and, when this install has them, the plan cache and the
working-memory cache tools. Offline, on the embedded default model, in a temporary
root unless ``--root`` is given. This is user interface: it prints.
"""

from __future__ import annotations

import asyncio
import gc
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from ..errors import AgentMemoryError

MODULE_ID = "tool-agent-memory"
# AmplifierSession validates that these are named; nothing initialises them here.
SESSION_PLAN: dict[str, Any] = {"session": {"orchestrator": "loop-basic", "context": "context-simple"}}

MEMORIES: tuple[dict[str, Any], ...] = (
    {
        "content": "Billing service: we chose PostgreSQL 16 over MySQL because we need row-level "
        "security and JSONB columns (architecture review, March).",
        "kind": "decision",
        "tags": ["billing", "database"],
        "importance": 0.8,
    },
    {
        "content": "The user prefers short answers with TypeScript examples, and wants pnpm instead of npm "
        "in every command.",
        "kind": "preference",
        "tags": ["style"],
    },
    {
        "content": "Staging deploys authenticate with the key sk-proj-4fJ9xQ2mZ7LbW1cR8tY6uV3nK0pH5sDg "
        "and always run from the release branch.",
        "kind": "fact",
        "tags": ["deploy", "staging"],
    },
    {
        "content": "CI runs on GitHub Actions in about 12 minutes; flaky tests are quarantined with the "
        "@flaky marker, never deleted.",
        "kind": "fact",
        "tags": ["ci"],
    },
    {
        "content": "The 3 March outage of the payments gateway was caused by an expired TLS certificate; "
        "renewals are now automated with cert-manager.",
        "kind": "event",
        "tags": ["incident", "payments"],
    },
    {
        # A changed fact, announced as people do ("now"): stored, linked to the fact it replaces.
        "content": "CI now runs on Buildkite in about 7 minutes; flaky tests are still quarantined with the "
        "@flaky marker.",
        "kind": "fact",
        "tags": ["ci"],
    },
    {
        # The first memory again, re-cased and re-spaced: an exact duplicate after normalisation.
        "content": "billing service:  We chose PostgreSQL 16 over MySQL because we need row-level "
        "security and JSONB columns (architecture review, March).",
        "kind": "decision",
        "tags": ["billing"],
    },
)

QUESTIONS: tuple[str, ...] = (
    "Which database does the billing service use, and why?",
    "How should I write code examples for this user?",
    "What caused the payments outage?",
    "Where does CI run and how long does it take?",
)

PLAN_PROMPT = "Deploy the billing service to staging"
PLAN_ACTIONS: list[dict[str, Any]] = [
    {"tool": "bash", "args": {"command": "git checkout release && git pull"}},
    {"tool": "bash", "args": {"command": "pnpm install --frozen-lockfile && pnpm run build"}},
    {"tool": "bash", "args": {"command": "kubectl apply -f k8s/billing/staging.yaml"}},
]
# Politeness and articles only: certified the same request, so replayed (a looser rewording is a candidate).
PLAN_REWORDING = "Could you deploy the billing service to staging, please?"
# Replaying the staging plan here would deploy to the wrong place: never a hit (a candidate naming the swap).
PLAN_NEAR_MISS = "Deploy the billing service to production"

CACHE_SCOPE = "task:fix-invoice-rounding"
CACHE_NOTES: tuple[dict[str, Any], ...] = (
    {
        "kind": "fact",
        "content": "Totals in src/billing/invoice.ts are computed in cents; rounding happens once at the end.",
        "file_ref": "src/billing/invoice.ts",
    },
    {"kind": "warning", "content": "test_invoice_totals fails: expects 1999, gets 2000 after the tax step."},
    {"kind": "decision", "content": "Round only the invoice total, not each line item, to stop double rounding."},
    {
        # Said again (case, punctuation, an article): certified the same, so it merges into the first note
        # instead of adding a line. A looser rewording stays a second item (a cache merge drops a wording).
        "kind": "fact",
        "content": "totals in src/billing/invoice.ts are computed in cents - the rounding happens once at the end",
        "file_ref": "src/billing/invoice.ts",
    },
)
PACK_SECTIONS = ("summary", "facts", "decisions", "snippets", "warnings")


class DemoFailed(AgentMemoryError):
    """The demo could not run (amplifier-core or the module's entry point missing)."""

    kind = "demo_failed"


class Narrator:
    """Prints the demo as it goes (text mode) and keeps the machine-readable report (JSON mode)."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self.report: dict[str, Any] = {"ok": True, "failures": []}

    def say(self, text: str = "") -> None:
        if not self.as_json:
            print(text, flush=True)

    def fail(self, tool: str, result: Any) -> None:
        message = (result.error or {}).get("message") if result.error else str(result.output)
        self.report["ok"] = False
        self.report["failures"].append({"tool": tool, "message": message})
        self.say(f"  !! {tool} failed: {message}")


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


async def _call(tools: dict[str, Any], name: str, args: dict[str, Any], timings: list[float]) -> Any:
    started = time.perf_counter()
    result = await tools[name].execute(args)
    timings.append(time.perf_counter() - started)
    return result


def _short(text: str, width: int = 96) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


async def _store_memories(tools: dict[str, Any], say: Narrator, timings: dict[str, list[float]]) -> list[str]:
    say.say("\n1. The agent stores what it learned (memory_store)")
    stored: list[dict[str, Any]] = []
    ids: list[str] = []
    for memory in MEMORIES:
        result = await _call(tools, "memory_store", memory, timings["memory_store"])
        if not result.success:
            say.fail("memory_store", result)
            continue
        out = result.output
        ids.append(out["id"])
        if out.get("duplicate"):
            verdict = f"exact duplicate of {out['id'][:8]}: nothing written"
        elif out.get("near_duplicate"):
            verdict = f"near duplicate of {out['id'][:8]} (similarity {out['similarity']}): refreshed"
        else:
            verdict = f"stored as {out['id'][:8]}"
        if out.get("superseded"):
            older = out["superseded"]
            verdict += f"; replaces {older['id'][:8]} ({_short(older['content'], 40)}), kept and ranked below it"
        if out.get("redacted"):
            found = sorted({name for names in out["redacted"].values() for name in names})
            verdict += f"; secret redacted ({', '.join(found)})"
        say.say(f"  [{memory['kind']:<10}] {_short(memory['content'], 70)}\n               -> {verdict}")
        stored.append({"kind": memory["kind"], **out})
    say.report["stored"] = stored
    return ids


async def _show_redaction(tools: dict[str, Any], memory_id: str, say: Narrator, timings: list[float]) -> None:
    result = await _call(tools, "memory_get", {"id": memory_id}, timings)
    if not result.success:
        say.fail("memory_get", result)
        return
    content = result.output["memory"]["content"]
    say.say(f"  what was written for the secret (memory_get): {_short(content, 110)}")
    say.report["redacted_content"] = content


async def _search(tools: dict[str, Any], say: Narrator, timings: list[float]) -> None:
    say.say("\n2. Later, the agent asks its memory (memory_search)")
    searches = []
    for question in QUESTIONS:
        result = await _call(tools, "memory_search", {"query": question, "limit": 2}, timings)
        if not result.success:
            say.fail("memory_search", result)
            continue
        say.say(f"  Q: {question}")
        for rank, hit in enumerate(result.output["results"], 1):
            older = " [superseded]" if hit.get("superseded_by") else ""
            say.say(f"     {rank}. [{hit['score']:.3f}] ({hit['kind']}){older} {_short(hit['content'], 84)}")
        searches.append({"query": question, "results": result.output["results"]})
    say.report["searches"] = searches


async def _plans(tools: dict[str, Any], say: Narrator, timings: dict[str, list[float]]) -> None:
    say.say("\n3. Plan cache: reuse a tool sequence that solved the same request (plan_*)")
    stored = await _call(tools, "plan_store", {"prompt": PLAN_PROMPT, "actions": PLAN_ACTIONS}, timings["plan_store"])
    if not stored.success:
        say.fail("plan_store", stored)
        return
    say.say(f"  plan_store  {PLAN_PROMPT!r}: {stored.output['steps']} steps as {stored.output['plan_id'][:8]}")
    lookups = []
    for label, prompt in (("rewording", PLAN_REWORDING), ("near miss", PLAN_NEAR_MISS)):
        result = await _call(tools, "plan_lookup", {"prompt": prompt}, timings["plan_lookup"])
        if not result.success:
            say.fail("plan_lookup", result)
            continue
        out = result.output
        if out.get("hit"):
            verdict = f"HIT {out.get('plan_id', '?')[:8]}, replay {len(out.get('actions', []))} steps"
            if "similarity" in out:
                verdict += f" (similarity {out['similarity']})"
        else:
            nearest = out.get("candidates") or []
            differs = "; ".join(nearest[0].get("differences") or []) if nearest else ""
            verdict = f"{out.get('answer', 'miss')}" + (f" (differs: {differs})" if differs else "")
        say.say(f"  plan_lookup {prompt!r} [{label}]: {verdict}")
        lookups.append({**out, "label": label, "query": prompt})
        if out.get("hit") and "plan_reward" in tools:
            reward = await _call(tools, "plan_reward", {"plan_id": out["plan_id"], "success": True}, [])
            if reward.success:
                say.say(f"  plan_reward success -> score {reward.output['score']}")
            else:
                say.fail("plan_reward", reward)
    say.report["plans"] = {"stored": stored.output, "lookups": lookups}


async def _cache(tools: dict[str, Any], say: Narrator, timings: dict[str, list[float]]) -> None:
    say.say("\n4. Working-memory cache: task notes packed into a token budget (cache_write, cache_pack)")
    written = []
    for note in CACHE_NOTES:
        result = await _call(tools, "cache_write", {**note, "scope": CACHE_SCOPE}, timings["cache_write"])
        if not result.success:
            say.fail("cache_write", result)
            return
        out = result.output
        verdict = f"merged into {out['item_id'][:8]} (similarity {out.get('similarity')})" if out["merged"] else (
            f"item {out['item_id'][:8]}"
        )
        say.say(f"  [{note['kind']:<8}] {_short(note['content'], 70)}\n             -> {verdict}")
        written.append(out)
    report: dict[str, Any] = {"written": written}
    if "cache_pack" in tools:
        args = {"scope": CACHE_SCOPE, "token_budget": 200, "query": "why does the invoice test fail?"}
        result = await _call(tools, "cache_pack", args, timings["cache_pack"])
        if not result.success:
            say.fail("cache_pack", result)
        else:
            out = result.output
            say.say(f"  cache_pack (budget 200 tokens) -> {out['token_count']} tokens "
                    f"(the notes in full: {out['full_tokens']}):")
            for section in PACK_SECTIONS:
                value = out.get(section)
                for line in [value] if isinstance(value, str) else value or []:
                    say.say(f"    {section:<9} {_short(line, 100)}")
            report["pack"] = out
    say.report["cache"] = report


def _median_ms(values: list[float]) -> float | None:
    return _ms(statistics.median(values)) if values else None


def _timings_report(mount_s: float, timings: dict[str, list[float]]) -> dict[str, Any]:
    out: dict[str, Any] = {"mount_ms": _ms(mount_s)}
    for name, values in timings.items():
        if not values:
            continue
        entry: dict[str, Any] = {"calls": len(values), "first_ms": _ms(values[0])}
        if len(values) > 1:
            entry["warm_median_ms"] = _median_ms(values[1:])
        out[name] = entry
    return out


async def _load_mount(coordinator: Any, config: dict[str, Any]) -> Any:
    from amplifier_core.loader import ModuleLoader

    loader = ModuleLoader(coordinator=coordinator)
    try:
        mount = await loader.load(MODULE_ID, config, coordinator=coordinator)
    except Exception as exc:
        raise DemoFailed(
            f"amplifier-core could not load {MODULE_ID!r} from its entry point ({exc}); install the module: "
            "pip install -e modules/tool-agent-memory"
        ) from exc
    return await mount(coordinator)


async def _run(root: Path, identity: str, extra_config: dict[str, Any], say: Narrator) -> None:
    try:
        from amplifier_core import AmplifierSession, HookResult
    except ImportError as exc:
        raise DemoFailed("the demo needs amplifier-core (the Amplifier host): pip install amplifier-core") from exc

    from ..events import EVENTS

    config = {**extra_config, "storage_root": str(root), "agent_identity": identity}
    session = AmplifierSession({**SESSION_PLAN, "tools": [{"module": MODULE_ID, "config": config}]})
    coordinator = session.coordinator
    seen: Counter[str] = Counter()

    async def record(event: str, data: dict[str, Any]) -> Any:
        seen[event] += 1
        return HookResult(action="continue")

    for event in EVENTS:
        coordinator.hooks.register(event, record, priority=100, name="agent-memory-demo")
    try:
        started = time.perf_counter()
        cleanup = await _load_mount(coordinator, config)
        mount_s = time.perf_counter() - started
        if cleanup is not None:
            coordinator.register_cleanup(cleanup)
        tools: dict[str, Any] = dict(coordinator.get("tools") or {})
        if not tools:
            raise DemoFailed(f"{MODULE_ID} mounted no tools")
        say.say(f"Amplifier session {session.session_id[:8]}: mounted {MODULE_ID} via its entry point "
                f"in {_ms(mount_s)} ms")
        say.say(f"  identity {coordinator.get_capability('agent_identity')!r}, root {root}")
        say.say(f"  tools: {', '.join(sorted(tools))}")
        say.report.update(
            session_id=session.session_id, identity=identity, root=str(root), tools=sorted(tools)
        )

        timings: dict[str, list[float]] = {name: [] for name in sorted(tools)}
        ids = await _store_memories(tools, say, timings)
        if len(ids) > 2:
            await _show_redaction(tools, ids[2], say, timings["memory_get"])
        await _search(tools, say, timings["memory_search"])
        if {"plan_store", "plan_lookup"} <= tools.keys():
            await _plans(tools, say, timings)
        if {"cache_write", "cache_pack"} <= tools.keys():
            await _cache(tools, say, timings)

        listed = await _call(tools, "memory_list", {"limit": 100}, timings["memory_list"])
        if listed.success:
            say.report["memory_count"] = listed.output["count"]
            say.say(f"\n{listed.output['count']} memories now in identity {identity!r} (memory_list)")
        else:
            say.fail("memory_list", listed)

        report = _timings_report(mount_s, timings)
        say.report["timings"] = report
        say.report["events"] = dict(sorted(seen.items()))
        say.say("\nTimings (the very first call loads the embedding model and opens the store; "
                "each feature's first call opens its collection)")
        say.say(f"  mount                {report['mount_ms']:>8} ms")
        for name, entry in report.items():
            if isinstance(entry, dict):
                warm = f", then median {entry['warm_median_ms']} ms warm" if "warm_median_ms" in entry else ""
                say.say(f"  {name:<20} {entry['first_ms']:>8} ms first{warm} ({entry['calls']} calls)")
        say.say("Events seen by a session hook: " + ", ".join(f"{k} x{v}" for k, v in sorted(seen.items())))
    finally:
        # Close everything inside the loop; a session left for interpreter exit can crash it.
        await coordinator.cleanup()
        del coordinator, session
        gc.collect()


def run_demo(
    root: str | None = None, identity: str = "demo", as_json: bool = False, config_path: str | None = None
) -> int:
    """Run the demo; return the exit code (1 if any tool call failed)."""
    from .config_file import load_config_file

    extra = load_config_file(config_path) if config_path else {}
    extra.pop("storage_root", None)
    extra.pop("agent_identity", None)
    temp = None if root else tempfile.mkdtemp(prefix="agent-memory-demo-")
    path = Path(root or temp or ".").expanduser().resolve()
    say = Narrator(as_json)
    say.say("agent-memory demo: a real Amplifier session, the embedded local model, offline")
    try:
        asyncio.run(_run(path, identity, extra, say))
    finally:
        if temp:
            shutil.rmtree(temp, ignore_errors=True)
    if as_json:
        print(json.dumps(say.report, ensure_ascii=False, default=str))
    elif temp:
        say.say(f"(the temporary root {temp} was removed; pass --root DIR to keep the store)")
    else:
        say.say(f"Try: agent-memory search 'billing database' --root {path} --identity {identity}")
    if not say.report["ok"]:
        print(f"agent-memory demo: {len(say.report['failures'])} tool call(s) failed", file=sys.stderr)
        return 1
    return 0
