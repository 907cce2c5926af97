"""Plan-cache benchmark: matching quality on the dev cases, and lookup latency at scale.

Default run (``python benchmarks/plans.py``): every ``stored`` prompt of
``../shared/data/plan-cache/dev.jsonl`` is stored through the real ``plan_store`` tool
(module mounted on amplifier-core's MockCoordinator, Qdrant Edge, the local model); every
positive and negative is looked up through ``plan_lookup`` with the default config.
Prints hit precision (hits returning the right plan / all hits), recall (positives answered
with the right plan) and near-miss false hits (negatives answered with any plan).
Skips cleanly when the data folder is missing. ``--verbose`` lists wrong hits and misses.

``--scale``: stores 10k and then 100k synthetic plans and times ``PlanService.lookup``
(query embedding included: every query text is new, so the embedding LRU never answers).
Synthetic plans: a few thousand distinct prompts are generated from templates and embedded
for real in batches; the rest are variants of them ("..., variant 17") whose vectors are
the base vector plus a small random perturbation (renormalised), written straight into the
``plans`` collection with the same payload (signature included) ``plan_store`` writes.
Past 5,000 unindexed plans ``plan_store`` builds the HNSW index (Qdrant Edge has no background
optimizer); the bulk fill bypasses ``plan_store``, so the benchmark builds it the same way and
prints the seconds it took. Run ``--scale`` alone: it takes a few minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA_DIR, p50_p95, peak_rss_mb, print_table

DATA = DATA_DIR / "plan-cache" / "dev.jsonl"


def load_cases() -> list[dict[str, Any]] | None:
    if not DATA.is_file():
        return None
    return [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]


async def run_dev(cases: list[dict[str, Any]], config: dict[str, Any], verbose: bool) -> dict[str, float]:
    """Store every case through plan_store, look up every positive and negative through plan_lookup."""
    from amplifier_core.testing import MockCoordinator

    import amplifier_module_tool_agent_memory as agent_memory

    with tempfile.TemporaryDirectory() as root:
        coordinator = MockCoordinator()
        cleanup = await agent_memory.mount(
            coordinator, {"storage_root": root, "agent_identity": "bench-plans", **config}
        )
        tools = coordinator.mount_points["tools"]
        plan_of: dict[str, str] = {}
        for case in cases:
            res = await tools["plan_store"].execute({"prompt": case["stored"], "actions": case["actions"]})
            assert res.success, res.error
            plan_of[res.output["plan_id"]] = case["id"]

        hits = right = positives = false_hits = negatives = 0
        latencies: list[float] = []
        wrong: list[str] = []
        missed: list[str] = []
        for case in cases:
            for kind in ("positives", "negatives"):
                for query in case[kind]:
                    started = time.perf_counter()
                    res = await tools["plan_lookup"].execute({"prompt": query})
                    latencies.append((time.perf_counter() - started) * 1000)
                    assert res.success, res.error
                    out = res.output
                    is_pos = kind == "positives"
                    positives += is_pos
                    negatives += not is_pos
                    if out["hit"]:
                        hits += 1
                        got = plan_of[out["plan_id"]]
                        ok = is_pos and got == case["id"]
                        right += ok
                        false_hits += not is_pos
                        if not ok:
                            wrong.append(f"  [{case['id']} {kind[:3]}] {query!r} -> {got} {out['prompt']!r} "
                                         f"(similarity {out['similarity']}, cosine {out.get('cosine')})")
                    elif is_pos:
                        own = [c for c in out["candidates"] if plan_of[c["plan_id"]] == case["id"]]
                        why = own[0]["reason"] if own else "own plan not among the nearest candidates"
                        missed.append(f"  [{case['id']}] {query!r} vs {case['stored']!r}: {why}")
        await cleanup()
        del tools, coordinator
        gc.collect()
    precision = right / hits if hits else 1.0
    recall = right / positives if positives else 0.0
    print(f"dev cases: {len(cases)} stored, {positives} positives, {negatives} near-miss negatives")
    print(f"hit precision {precision:.3f} ({right}/{hits})  recall {recall:.3f} ({right}/{positives})  "
          f"near-miss false hits {false_hits}/{negatives}  wrong hits {len(wrong)}")
    p50, p95 = p50_p95(latencies)
    print(f"plan_lookup through the tool (warm model, small store): p50 {p50:.1f} ms  p95 {p95:.1f} ms")
    if verbose:
        print("wrong hits:\n" + ("\n".join(wrong) or "  (none)"))
        print("missed positives:\n" + ("\n".join(missed) or "  (none)"))
    return {"precision": precision, "recall": recall, "false_hits": float(false_hits)}


_VERBS = ("add", "remove", "rename", "fix", "speed up", "slow down", "hide", "show", "move", "resize", "recolor",
          "document", "refactor", "test", "log", "cache", "validate", "translate", "sort", "export")
_OBJECTS = ("login button", "settings page", "player sprite", "enemy spawner", "inventory grid", "save system",
            "audio mixer", "main menu", "pause screen", "health bar", "minimap", "chat window", "leaderboard",
            "payment form", "search box", "user profile", "dark mode toggle", "error banner", "upload dialog",
            "billing report", "invoice table", "email template", "API client", "database migration",
            "cron job", "config loader", "retry policy", "rate limiter", "session cookie", "CSV importer")
_PLACES = ("", " on the dashboard", " in the admin panel", " for mobile", " in the game scene",
           " in the checkout flow", " on the home page", " in the backend")
_HELD_OUT_PLACES = (" in the sidebar", " in the footer", " for tablets")


def synthetic_prompts() -> list[str]:
    """Distinct, realistic-looking requests (20 verbs x 30 objects x 8 places = 4,800)."""
    return [f"{v.capitalize()} the {o}{p}" for v, o, p in itertools.product(_VERBS, _OBJECTS, _PLACES)]


def query_prompts(n: int, seed: int) -> list[str]:
    """New query texts: held-out places, so no query was stored or embedded before."""
    rng = random.Random(seed)
    combos = list(itertools.product(_VERBS, _OBJECTS, _HELD_OUT_PLACES))
    rng.shuffle(combos)
    return [f"Please {v} the {o}{p}" for v, o, p in combos[:n]]


def fill(rt: Any, base_prompts: list[str], base_vecs: list[list[float]], target: int, rng: random.Random) -> float:
    """Write synthetic plans until the collection holds ``target``; returns seconds spent."""
    import numpy as np

    from amplifier_module_tool_agent_memory.plans.matching import normalise_prompt, signature
    from amplifier_module_tool_agent_memory.plans.models import PlanRecord
    from amplifier_module_tool_agent_memory.plans.service import PlanService, plan_id_for

    svc = rt.plans()
    started = time.perf_counter()
    have = svc.count()
    base = np.asarray(base_vecs, dtype=np.float32)
    now = rt.clock()
    batch: list[tuple[str, list[float], dict[str, Any]]] = []
    i = have
    while i < target:
        j = i % len(base_prompts)
        prompt = base_prompts[j] if i < len(base_prompts) else f"{base_prompts[j]}, variant {i // len(base_prompts)}"
        vec = base[j] if i < len(base_prompts) else base[j] + rng.normal(0, 0.02, base.shape[1]).astype(np.float32)
        vec = vec / np.linalg.norm(vec)
        record = PlanRecord(
            prompt=prompt, prompt_norm=normalise_prompt(prompt),
            actions=[{"tool": "edit_file", "args": {"path": f"src/file_{i}.py", "find": "a", "replace": "b"}}],
            score=1.0, stale=False, stale_reason=None, uses=0, rewards=0, successes=0, failures=0,
            created_at=now, updated_at=now, last_used_at=None, rewarded_at=None,
        )
        batch.append((plan_id_for(prompt), vec.tolist(), PlanService._payload(record, signature(prompt))))
        i += 1
        if len(batch) >= 1000:
            svc.coll.upsert(batch)
            batch = []
    svc.coll.upsert(batch)
    return time.perf_counter() - started


def run_scale(sizes: list[int], n_queries: int, n_base: int) -> None:
    """Time PlanService.lookup (embedding included) at each size."""
    import numpy as np

    from amplifier_module_tool_agent_memory.config import parse_config
    from amplifier_module_tool_agent_memory.identity import ResolvedIdentity
    from amplifier_module_tool_agent_memory.plans.models import PlanLookupInput
    from amplifier_module_tool_agent_memory.plans.service import INDEX_AFTER_UNINDEXED
    from amplifier_module_tool_agent_memory.runtime import AgentMemory

    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory() as root:
        rt = AgentMemory(parse_config({"storage_root": root}), ResolvedIdentity("bench-scale", "config"))
        embedder = rt.embedder()
        base_prompts = synthetic_prompts()[:n_base]
        started = time.perf_counter()
        base_vecs = embedder.embed_documents(base_prompts)
        print(f"embedded {len(base_prompts)} distinct base prompts in {time.perf_counter() - started:.1f} s")
        queries = iter(query_prompts(len(sizes) * (n_queries + 20), seed=3))
        rows = []
        for size in sizes:
            spent = fill(rt, base_prompts, base_vecs, size, rng)
            svc = rt.plans()
            index_s = 0.0
            if svc.unindexed() >= INDEX_AFTER_UNINDEXED:  # what plan_store does past that many unindexed plans
                index_s = svc.build_index()
            for _ in range(20):  # warm-up: caches, first-query costs
                svc.lookup(PlanLookupInput(prompt=next(queries)))
            embed_ms: list[float] = []
            search_ms: list[float] = []
            total_ms: list[float] = []
            hits = 0
            for _ in range(n_queries):
                text = next(queries)
                # The query's embedding (new text: computed, then kept in the LRU), then the rest of the
                # lookup (which finds the embedding in the LRU): their sum is a lookup with a fresh embedding.
                t0 = time.perf_counter()
                embedder.embed_query(text)
                t1 = time.perf_counter()
                out = svc.lookup(PlanLookupInput(prompt=text))
                t2 = time.perf_counter()
                embed_ms.append((t1 - t0) * 1000)
                search_ms.append((t2 - t1) * 1000)
                total_ms.append((t2 - t0) * 1000)
                hits += out.hit is not None
            rows.append([size, svc.count(), round(spent, 1), round(index_s, 1), *p50_p95(embed_ms),
                         *p50_p95(search_ms), *p50_p95(total_ms), hits, n_queries])
        print_table(["plans", "stored", "fill s", "index s", "embed p50", "embed p95", "search p50", "search p95",
                     "lookup p50 ms", "lookup p95 ms", "hits", "queries"], rows)
        print("lookup = query embedding + search (Qdrant query, matching, use counter); times in ms")
        load = os.getloadavg()
        print(f"load average during the run: {load[0]:.1f} (on {os.cpu_count()} cores)")
        print(f"peak RSS {peak_rss_mb():.0f} MiB")
        rt.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", action="store_true", help="time lookups with 10k and 100k stored plans")
    ap.add_argument("--sizes", default="10000,100000", help="store sizes for --scale")
    ap.add_argument("--queries", type=int, default=200, help="timed lookups per size (--scale)")
    ap.add_argument("--base", type=int, default=3000, help="distinct prompts embedded for real (--scale)")
    ap.add_argument("--threshold", type=float, default=None, help="override plans.similarity_threshold")
    ap.add_argument("--verbose", action="store_true", help="list wrong hits and missed positives")
    args = ap.parse_args()
    if args.scale:
        run_scale([int(s) for s in args.sizes.split(",")], args.queries, args.base)
        return 0
    cases = load_cases()
    if cases is None:
        print(f"skipped: the plan-cache dev data is not at {DATA}")
        return 0
    config: dict[str, Any] = {}
    if args.threshold is not None:
        config["plans"] = {"similarity_threshold": args.threshold}
    asyncio.run(run_dev(cases, config, args.verbose))
    return 0


if __name__ == "__main__":
    sys.exit(main())
