"""Plan-cache benchmark: matching quality on the dev cases, and lookup latency at scale.

Default run (``python benchmarks/plans.py``): for each of ``../shared/data/plan-cache/dev.jsonl``
and ``dev-multidomain.jsonl``, every ``stored`` prompt is stored through the real ``plan_store``
tool (module mounted on amplifier-core's MockCoordinator, Qdrant Edge, the local model); every
positive and negative is looked up through ``plan_lookup`` with the default config. Prints, per
file and per domain: hit precision (hits returning the right plan / all hits; a ``candidate``
is not a hit), recall (positives answered with the right plan), near-miss false hits
(negatives answered with any plan) and the share of ``candidate`` answers.

Leave-one-domain-out (dev-multidomain): the comparison's parameters (``CompareSettings``:
verb hypernyms as the same action, aligned share, rewording/same cosine, subset cosine, framing words)
are chosen on five domains from a small grid (highest recall with precision >= 0.97, else highest
precision) and measured on the sixth; the six held-out results are summed. The grid re-judges the three nearest stored
prompts of each request (cosines from the module's own embedder, as Qdrant computes them)
with ``Comparator.judge`` and applies plan_lookup's rule to them, so it needs no new store
per setting. Skips cleanly when the data folder is missing. ``--verbose`` lists wrong hits
and missed positives.

``--scale``: stores 10k and then 100k synthetic plans and times ``PlanService.lookup``
(query embedding included: every query text is new, so the embedding LRU never answers).
Synthetic plans: a few thousand distinct prompts are generated from templates and embedded
for real in batches; the rest are variants of them ("..., variant 17") whose vectors are
the base vector plus a small random perturbation (renormalised), written straight into the
``plans`` collection with the payload ``plan_store`` writes.
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
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA_DIR, p50_p95, peak_rss_mb, print_table

FILES = ("dev.jsonl", "dev-multidomain.jsonl")
TARGET_PRECISION = 0.97


def load_cases(name: str) -> list[dict[str, Any]] | None:
    path = DATA_DIR / "plan-cache" / name
    if not path.is_file():
        return None
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@dataclass
class Lookup:
    """One plan_lookup of the benchmark: what was asked, what it should return, what came back."""

    case: str
    domain: str
    positive: bool
    query: str
    answer: str
    got: str | None
    offered: str | None = None
    """The case of the plan returned as a hit or as the candidate to confirm."""
    nearest: list[tuple[str, str, float]] = field(default_factory=list)
    """(case id, stored prompt, cosine) of the nearest plans the lookup judged."""


@dataclass
class Tally:
    hits: int = 0
    right: int = 0
    positives: int = 0
    negatives: int = 0
    false_hits: int = 0
    candidates: int = 0
    lookups: int = 0

    def add(self, positive: bool, answer: str, correct: bool) -> None:
        self.lookups += 1
        self.positives += positive
        self.negatives += not positive
        self.candidates += answer == "candidate"
        if answer == "hit":
            self.hits += 1
            self.right += positive and correct
            self.false_hits += not positive

    @property
    def precision(self) -> float:
        return self.right / self.hits if self.hits else 1.0

    @property
    def recall(self) -> float:
        return self.right / self.positives if self.positives else 0.0

    def row(self, name: str) -> list[object]:
        return [name, self.positives, self.negatives, round(self.precision, 3), round(self.recall, 3),
                f"{self.false_hits}/{self.negatives}", f"{self.candidates / self.lookups:.2f}" if self.lookups else "-"]


HEADERS = ["set", "positives", "negatives", "precision", "recall", "near-miss hits", "candidate share"]


async def run_dev(cases: list[dict[str, Any]], config: dict[str, Any], verbose: bool) -> list[Lookup]:
    """Store every case through plan_store, look up every positive and negative through plan_lookup."""
    from amplifier_core.testing import MockCoordinator

    import amplifier_module_tool_agent_memory as agent_memory

    out: list[Lookup] = []
    with tempfile.TemporaryDirectory() as root:
        coordinator = MockCoordinator()
        cleanup = await agent_memory.mount(
            coordinator, {"storage_root": root, "agent_identity": "bench-plans", **config}
        )
        tools = coordinator.mount_points["tools"]
        # The nearest plans each lookup judged, recomputed with the module's own (process-wide) embedder:
        # the leave-one-domain-out grid re-judges them under other settings.
        from amplifier_module_tool_agent_memory.config import EmbeddingConfig
        from amplifier_module_tool_agent_memory.embeddings import get_embedder

        embedder = get_embedder(EmbeddingConfig())
        stored_vecs = embedder.embed_documents([case["stored"] for case in cases])
        plan_of: dict[str, str] = {}
        for case in cases:
            res = await tools["plan_store"].execute({"prompt": case["stored"], "actions": case["actions"]})
            assert res.success, res.error
            plan_of[res.output["plan_id"]] = case["id"]
        latencies: list[float] = []
        for case in cases:
            for kind in ("positives", "negatives"):
                for query in case[kind]:
                    started = time.perf_counter()
                    res = await tools["plan_lookup"].execute({"prompt": query})
                    latencies.append((time.perf_counter() - started) * 1000)
                    assert res.success, res.error

                    o = res.output
                    answer = o.get("answer", "hit" if o["hit"] else "miss")
                    got = plan_of[o["plan_id"]] if o["hit"] else None
                    offered = got or (plan_of[o["candidate"]["plan_id"]] if answer == "candidate" else None)
                    qv = embedder.embed_query(query)
                    cosines = [sum(x * y for x, y in zip(qv, sv, strict=True)) for sv in stored_vecs]
                    scored = sorted(zip(cosines, cases, strict=True), key=lambda pair: -pair[0])[:3]
                    nearest = [(c["id"], c["stored"], cos) for cos, c in scored]
                    domain = case.get("domain", "game")
                    out.append(Lookup(case["id"], domain, kind == "positives", query, answer, got, offered, nearest))
                    if verbose and ((kind == "positives" and got != case["id"]) or (kind == "negatives" and got)):
                        why = next((c.get("reason", "") for c in o.get("candidates", [])
                                    if plan_of[c["plan_id"]] == case["id"]), o.get("reason", ""))
                        print(f"  [{case['id']} {kind[:3]} {answer}] {query!r}: {why}")
        await cleanup()
        del tools, coordinator
        gc.collect()
    p50, p95 = p50_p95(latencies)
    print(f"plan_lookup through the tool (warm model, small store): p50 {p50:.1f} ms  p95 {p95:.1f} ms")
    return out


def print_offered(lookups: list[Lookup]) -> None:
    """How often the agent is shown the right plan at all (a hit, or the candidate it confirms), and how often a
    near-miss is shown as a candidate (never replayed without the agent's confirmation)."""
    positives = [lk for lk in lookups if lk.positive]
    negatives = [lk for lk in lookups if not lk.positive]
    right = sum(lk.offered == lk.case for lk in positives)
    shown = sum(lk.answer == "candidate" for lk in negatives)
    print(f"right plan offered (hit or candidate to confirm): {right} of {len(positives)} rewordings "
          f"({right / max(1, len(positives)):.2f}); near-misses shown as a candidate: {shown} of {len(negatives)} "
          f"({shown / max(1, len(negatives)):.2f})")


def tally(lookups: list[Lookup], answer_of: Any = None) -> Tally:
    t = Tally()
    for lk in lookups:
        answer, got = answer_of(lk) if answer_of else (lk.answer, lk.got)
        t.add(lk.positive, answer, got == lk.case)
    return t


def rejudge(settings: Any, threshold: float) -> Any:
    """plan_lookup's rule over the nearest plans a lookup saw, under other comparison settings."""
    from amplifier_module_tool_agent_memory.compare import Comparator
    from amplifier_module_tool_agent_memory.config import EmbeddingConfig
    from amplifier_module_tool_agent_memory.embeddings import get_embedder
    from amplifier_module_tool_agent_memory.plans.service import to_confirm

    comparator = Comparator(get_embedder(EmbeddingConfig()), settings=settings)

    def answer_of(lk: Lookup) -> tuple[str, str | None]:
        judged = [(case, cos, comparator.judge(prompt, lk.query, cos)) for case, prompt, cos in lk.nearest]
        hits = sorted((j for j in judged if j[2].same), key=lambda j: -j[1])
        if hits:
            return "hit", hits[0][0]
        if any(to_confirm(c, cos, threshold) for _, cos, c in judged):
            return "candidate", None
        return "miss", None

    return answer_of


def leave_one_domain_out(lookups: list[Lookup], threshold: float) -> None:
    """Tune CompareSettings on five domains, measure on the sixth; print each fold and the sum."""
    from amplifier_module_tool_agent_memory.compare import CompareSettings

    grid = [
        CompareSettings(action_same=act, aligned=al, same_cosine=rc, rewording_cosine=rc, subset_cosine=sc,
                        framing_words=fw)
        for act, al, rc, sc, fw in itertools.product(
            (True, False), (0.5, 0.6, 0.7), (0.7, 0.8), (0.6, 0.7, None), (0, 1)
        )
    ]
    # Every lookup's answer under every setting, once; the folds only add them up.
    answers = [[judge(lk) for lk in lookups] for judge in (rejudge(s, threshold) for s in grid)]

    def score(k: int, idx: list[int]) -> Tally:
        t = Tally()
        for i in idx:
            answer, got = answers[k][i]
            t.add(lookups[i].positive, answer, got == lookups[i].case)
        return t

    domains = sorted({lk.domain for lk in lookups})
    rows: list[list[object]] = []
    total = Tally()
    for held in domains:
        train = [i for i, lk in enumerate(lookups) if lk.domain != held]
        test = [i for i, lk in enumerate(lookups) if lk.domain == held]
        scored = [(score(k, train), k) for k in range(len(grid))]
        ok = [(t.recall, t.precision, k) for t, k in scored if t.precision >= TARGET_PRECISION]
        best = max(ok)[2] if ok else max((t.precision, t.recall, k) for t, k in scored)[2]
        result = score(best, test)
        s = grid[best]
        chosen = (f"act {'y' if s.action_same else 'n'} al {s.aligned} cos {s.rewording_cosine} sub {s.subset_cosine}"
                  f" fr {s.framing_words}")
        rows.append([*result.row(held), chosen])
        for name in ("hits", "right", "positives", "negatives", "false_hits", "candidates", "lookups"):
            setattr(total, name, getattr(total, name) + getattr(result, name))
    rows.append([*total.row("all held out"), ""])
    print("leave-one-domain-out (settings chosen on the other five domains):")
    print_table([*HEADERS, "chosen settings"], rows)


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

    from amplifier_module_tool_agent_memory.plans.models import PlanRecord
    from amplifier_module_tool_agent_memory.plans.service import PlanService, normalise_prompt, plan_id_for

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
        batch.append((plan_id_for(prompt), vec.tolist(), PlanService._payload(record)))
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
    config: dict[str, Any] = {}
    if args.threshold is not None:
        config["plans"] = {"similarity_threshold": args.threshold}
    from amplifier_module_tool_agent_memory.config import PlanConfig

    threshold = args.threshold if args.threshold is not None else PlanConfig().similarity_threshold
    for name in FILES:
        cases = load_cases(name)
        if cases is None:
            print(f"skipped: the plan-cache dev data is not at {DATA_DIR / 'plan-cache' / name}")
            continue
        print(f"== {name}: {len(cases)} stored plans")
        lookups = asyncio.run(run_dev(cases, config, args.verbose))
        by_domain: dict[str, list[Lookup]] = defaultdict(list)
        for lk in lookups:
            by_domain[lk.domain].append(lk)
        rows = [tally(lookups).row("all")]
        if len(by_domain) > 1:
            rows += [tally(v).row(k) for k, v in sorted(by_domain.items())]
        print_table(HEADERS, rows)
        print_offered(lookups)
        if len(by_domain) > 1:
            leave_one_domain_out(lookups, threshold)
    return 0


if __name__ == "__main__":
    sys.exit(main())
