"""Plan-cache benchmark: certify or ask (issue 16) on the dev cases, and lookup latency at scale.

Default run (``python benchmarks/plans.py``): for each of ``../shared/data/plan-cache/dev.jsonl``
and ``dev-multidomain.jsonl``, every ``stored`` prompt is stored through the real ``plan_store``
tool (module mounted on amplifier-core's MockCoordinator, Qdrant Edge, the local model); every
rewording (positive), near-miss (negative), trivial rewording (generated: politeness, articles,
case, punctuation) and each of 50 unrelated requests written here is looked up through
``plan_lookup`` with the default config. Prints, per file and per domain:

* false hits (a hit with another request's plan, or any hit for a near-miss or unrelated request);
* right hits and right plan offered (a hit, or the first candidate, is the right plan) of rewordings;
* near-misses answered ``candidate`` with their stored plan among the candidates and at least one named
  difference that mentions what actually differs (a word or value only one text has, or the order);
* candidates per candidate answer and the tokens they cost;
* unrelated requests answered with no candidate; trivial rewordings certified (hits).

The candidate floor (``plans.candidate_floor``) is chosen from the cosines the lookups saw: the highest
floor that loses no rewording's right plan on the tuning part. Held apart: chosen on dev.jsonl
and the first 25 unrelated requests, measured on dev-multidomain.jsonl and the other 25; and
leave-one-domain-out on dev-multidomain. ``--verbose`` lists every false hit, every rewording whose
plan was not offered and every near-miss without a real named difference.

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
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA_DIR, p50_p95, peak_rss_mb, print_table

FILES = ("dev.jsonl", "dev-multidomain.jsonl")
TARGET_OFFERED = 1.0
FLOORS = tuple(round(0.30 + 0.025 * k, 3) for k in range(17))

UNRELATED = (
    "What is the weather like in Lisbon tomorrow?", "Tell me a joke about penguins.",
    "Who won the 1998 football world cup?", "Translate 'good morning' into Japanese.",
    "How many calories are in a banana?", "Recommend a good science fiction novel.",
    "What's the capital of Australia?", "Write a haiku about autumn leaves.",
    "How do I boil an egg so the yolk stays soft?", "Explain the offside rule in football.",
    "What time is it in Tokyo right now?", "Suggest a name for my new puppy.",
    "How tall is Mount Kilimanjaro?", "Give me a recipe for vegetarian lasagna.",
    "What does the word 'serendipity' mean?", "Plan a three-day trip to Rome.",
    "Summarise the plot of Hamlet in two sentences.", "Is it going to rain this weekend?",
    "How do I get red wine out of a carpet?", "What are good stretches for lower back pain?",
    "Who painted the Girl with a Pearl Earring?", "Convert 70 degrees Fahrenheit to Celsius.",
    "What's a good gift for a ten year old?", "How long should I steep green tea?",
    "Name three famous jazz trumpeters.", "Why is the sky blue?",
    "What's the best way to learn to juggle?", "How many players are on a rugby team?",
    "Write a birthday message for my grandmother.", "What rhymes with orange?",
    "How do I repot a cactus without getting hurt?", "When is the next full moon?",
    "What is the population of Canada?", "Suggest a board game for four people.",
    "How do bees make honey?", "What should I pack for a beach holiday?",
    "Describe the taste of durian.", "Who wrote Pride and Prejudice?",
    "How do I tie a bowline knot?", "What is the speed of sound in air?",
    "Give me a motivational quote for Monday.", "How many bones are in the human body?",
    "Which wine goes well with salmon?", "What are the rules of chess castling?",
    "How do I fold a paper crane?", "What's the difference between a frog and a toad?",
    "Recommend a podcast about history.", "How far is the Moon from Earth?",
    "What's a polite way to decline a wedding invitation?", "How do I keep basil alive indoors?",
)
"""50 requests no plan of the data files answers (written for this benchmark)."""

_ARTICLES = ("the", "a", "an")


def trivial_rewordings(prompt: str) -> list[str]:
    """Rewordings that change nothing: politeness, articles, case, punctuation (inflection: tests/compare)."""
    bare = prompt.rstrip(".!?")
    no_articles = " ".join(w for w in bare.split() if w.lower() not in _ARTICLES)
    return [f"Please {bare[:1].lower()}{bare[1:]}.", f"Could you {bare[:1].lower()}{bare[1:]}?", bare.upper(),
            f"{bare}!", no_articles, f"{bare}, thanks"]


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
    kind: str
    """positive, negative, trivial or unrelated."""
    query: str
    answer: str
    hit: str | None
    """The case of the plan returned as a hit."""
    offered: list[str] = field(default_factory=list)
    """The cases of the candidates, nearest first."""
    tokens: int = 0
    """Tokens of the candidates the answer carried."""
    real_difference: bool = False
    """The candidate of its own case names a difference that mentions what actually differs."""
    nearest: list[tuple[str, float]] = field(default_factory=list)
    """(case, cosine) of every stored plan, nearest first (to re-apply other floors)."""
    certified: set[str] = field(default_factory=set)
    """Cases whose stored prompt certify() calls the same request."""


def mentions_what_differs(stored: str, asked: str, differences: list[Any]) -> bool:
    """Some named difference is an order, or names a word or value only one text has."""
    from amplifier_module_tool_agent_memory.compare.certify import words_in_place

    ua, ub = words_in_place(stored), words_in_place(asked)
    only = (Counter(u.key for u in ua) - Counter(u.key for u in ub)) + (
        Counter(u.key for u in ub) - Counter(u.key for u in ua))
    texts = {u.text.lower() for u in (*ua, *ub) if u.key in only}
    for d in differences:
        if d.kind == "order":
            return True
        said = f" {d.old or ''} {d.new or ''} ".lower()
        if any(t in said for t in texts):
            return True
    return False


async def run_dev(cases: list[dict[str, Any]], config: dict[str, Any]) -> list[Lookup]:
    """Store every case through plan_store, look up every request through plan_lookup."""
    from amplifier_core.testing import MockCoordinator

    import amplifier_module_tool_agent_memory as agent_memory
    from amplifier_module_tool_agent_memory.compare import certify, describe
    from amplifier_module_tool_agent_memory.config import EmbeddingConfig
    from amplifier_module_tool_agent_memory.embeddings import get_embedder
    from amplifier_module_tool_agent_memory.tokens import count_rendered

    out: list[Lookup] = []
    with tempfile.TemporaryDirectory() as root:
        coordinator = MockCoordinator()
        cleanup = await agent_memory.mount(
            coordinator, {"storage_root": root, "agent_identity": "bench-plans", **config}
        )
        tools = coordinator.mount_points["tools"]
        embedder = get_embedder(EmbeddingConfig())
        stored_vecs = embedder.embed_documents([case["stored"] for case in cases])
        plan_of: dict[str, str] = {}
        for case in cases:
            res = await tools["plan_store"].execute({"prompt": case["stored"], "actions": case["actions"]})
            assert res.success, res.error
            plan_of[res.output["plan_id"]] = case["id"]
        latencies: list[float] = []
        queries = [(case, kind, q) for case in cases for kind, key in (("positive", "positives"),
                   ("negative", "negatives")) for q in case[key]]
        queries += [(case, "trivial", q) for case in cases for q in trivial_rewordings(case["stored"])]
        queries += [({"id": "-", "domain": "unrelated", "stored": ""}, "unrelated", q) for q in UNRELATED]
        for case, kind, query in queries:
            started = time.perf_counter()
            res = await tools["plan_lookup"].execute({"prompt": query})
            latencies.append((time.perf_counter() - started) * 1000)
            assert res.success, res.error
            o = res.output
            offered = [plan_of[c["plan_id"]] for c in o.get("candidates", [])]
            qv = embedder.embed_query(query)
            cosines = [sum(x * y for x, y in zip(qv, sv, strict=True)) for sv in stored_vecs]
            nearest = sorted(((c["id"], cos) for cos, c in zip(cosines, cases, strict=True)), key=lambda p: -p[1])
            lk = Lookup(case["id"], case.get("domain", "game"), kind, query, o["answer"],
                        plan_of[o["plan_id"]] if o["hit"] else None, offered,
                        count_rendered(o["candidates"]) if o.get("candidates") else 0, nearest=nearest,
                        certified={c["id"] for c in cases if certify(c["stored"], query).same})
            if kind == "negative":
                lk.real_difference = mentions_what_differs(case["stored"], query,
                                                           list(describe(case["stored"], query)))
            out.append(lk)
        await cleanup()
        del tools, coordinator
        gc.collect()
    p50, p95 = p50_p95(latencies)
    print(f"plan_lookup through the tool (warm model, small store): p50 {p50:.1f} ms  p95 {p95:.1f} ms")
    return out


def answer_at(lk: Lookup, floor: float, top_k: int = 3) -> tuple[str | None, list[str]]:
    """(hit case, offered cases) plan_lookup gives at ``floor`` (certification does not depend on it)."""
    top = lk.nearest[:top_k]
    hit = next((c for c, _ in top if c in lk.certified), None)
    if hit is not None:
        return hit, []
    return None, [c for c, cos in top if cos >= floor]


@dataclass
class Tally:
    rewordings: int = 0
    right_hits: int = 0
    offered: int = 0
    false_hits: int = 0
    near_misses: int = 0
    named: int = 0
    unrelated: int = 0
    unrelated_none: int = 0
    trivial: int = 0
    trivial_hits: int = 0
    answers_with_candidates: int = 0
    candidates: int = 0
    tokens: int = 0

    def add(self, lk: Lookup, floor: float | None = None) -> None:
        hit, offered = (lk.hit, lk.offered) if floor is None else answer_at(lk, floor)
        first = hit or (offered[0] if offered else None)
        if hit is not None and (lk.kind in ("negative", "unrelated") or hit != lk.case):
            self.false_hits += 1
        if offered:
            self.answers_with_candidates += 1
            self.candidates += len(offered)
            self.tokens += lk.tokens
        if lk.kind == "positive":
            self.rewordings += 1
            self.right_hits += hit == lk.case
            self.offered += first == lk.case
        elif lk.kind == "negative":
            self.near_misses += 1
            self.named += hit is None and lk.case in offered and lk.real_difference
        elif lk.kind == "unrelated":
            self.unrelated += 1
            self.unrelated_none += hit is None and not offered
        else:
            self.trivial += 1
            self.trivial_hits += hit == lk.case

    def row(self, name: str) -> list[object]:
        def share(a: int, b: int) -> str:
            return f"{a / b:.3f}" if b else "-"

        per = self.answers_with_candidates
        return [name, f"{self.false_hits}", share(self.right_hits, self.rewordings),
                share(self.offered, self.rewordings), share(self.named, self.near_misses),
                share(self.unrelated_none, self.unrelated), share(self.trivial_hits, self.trivial),
                f"{self.candidates / per:.2f}" if per else "-", f"{self.tokens / per:.0f}" if per else "-"]


HEADERS = ["set", "false hits", "right hits", "right offered", "near-miss named", "unrelated none",
           "trivial certified", "cands/answer", "tokens/answer"]


def tally(lookups: list[Lookup], floor: float | None = None) -> Tally:
    t = Tally()
    for lk in lookups:
        t.add(lk, floor)
    return t


def choose_floor(lookups: list[Lookup]) -> float:
    """The highest floor that keeps the right-plan-offered share at TARGET_OFFERED or more on ``lookups``."""
    ok = [f for f in FLOORS if (t := tally(lookups, f)).rewordings and t.offered / t.rewordings >= TARGET_OFFERED]
    return max(ok) if ok else min(FLOORS)


def held_apart(results: dict[str, list[Lookup]]) -> None:
    """Floors chosen on one part, measured on the other (see the module doc)."""
    unrelated = [lk for lk in results.get("dev.jsonl", []) if lk.kind == "unrelated"]
    tune_unrelated = unrelated[:25]
    print("floor sweep (every file, every request kind; the default config's answers are the rows above):")
    rows = []
    everything = [lk for lks in results.values() for lk in lks]
    for f in FLOORS:
        rows.append(tally(everything, f).row(f"floor {f}"))
    print_table(HEADERS, rows)
    if "dev.jsonl" in results and "dev-multidomain.jsonl" in results:
        tune = [lk for lk in results["dev.jsonl"] if lk.kind != "unrelated"] + tune_unrelated
        floor = choose_floor(tune)
        test = [lk for lk in results["dev-multidomain.jsonl"] if lk.kind != "unrelated"]
        test += [lk for lk in results["dev-multidomain.jsonl"] if lk.kind == "unrelated"][25:]
        print(f"held apart: floor chosen on dev.jsonl + 25 unrelated = {floor}; measured on dev-multidomain + the "
              "other 25 unrelated:")
        print_table(HEADERS, [tally(tune, floor).row("tuned part"), tally(test, floor).row("held-apart part")])
    multi = results.get("dev-multidomain.jsonl")
    if multi:
        domains = sorted({lk.domain for lk in multi if lk.kind != "unrelated"})
        rows, total = [], Tally()
        multi_unrelated = [lk for lk in multi if lk.kind == "unrelated"]
        for held in domains:
            tune = [lk for lk in multi if lk.domain not in (held, "unrelated")] + multi_unrelated[:25]
            floor = choose_floor(tune)
            test = [lk for lk in multi if lk.domain == held]
            t = tally(test, floor)
            rows.append([*t.row(held), floor])
            for lk in test:
                total.add(lk, floor)
        for lk in multi_unrelated[25:]:
            total.add(lk, min(choose_floor([x for x in multi if x.domain != "unrelated"] + multi_unrelated[:25]),
                              1.0))
        rows.append([*total.row("all held out"), ""])
        print("leave-one-domain-out (floor chosen on the other five domains and 25 unrelated):")
        print_table([*HEADERS, "floor"], rows)


def print_failures(lookups: list[Lookup]) -> None:
    for lk in lookups:
        if lk.hit is not None and (lk.kind in ("negative", "unrelated") or lk.hit != lk.case):
            print(f"  FALSE HIT [{lk.case} {lk.kind}] {lk.query!r} -> {lk.hit}")
        elif lk.kind == "positive" and (lk.hit or (lk.offered[0] if lk.offered else None)) != lk.case:
            print(f"  NOT OFFERED [{lk.case}] {lk.query!r}: {lk.answer} {lk.offered} nearest {lk.nearest[:2]}")
        elif lk.kind == "negative" and not (lk.case in lk.offered and lk.real_difference):
            print(f"  NEAR-MISS UNNAMED [{lk.case}] {lk.query!r}: {lk.answer} {lk.offered}")
        elif lk.kind == "unrelated" and lk.offered:
            print(f"  UNRELATED OFFERED {lk.query!r}: {lk.offered} nearest {lk.nearest[:1]}")
        elif lk.kind == "trivial" and lk.hit != lk.case:
            print(f"  TRIVIAL NOT CERTIFIED [{lk.case}] {lk.query!r}")


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
    from amplifier_module_tool_agent_memory.plans.service import normalise_prompt, plan_id_for

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
        batch.append((plan_id_for(prompt), vec.tolist(), record.to_payload()))
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
    ap.add_argument("--floor", type=float, default=None, help="override plans.candidate_floor")
    ap.add_argument("--verbose", action="store_true", help="list every failure")
    args = ap.parse_args()
    if args.scale:
        run_scale([int(s) for s in args.sizes.split(",")], args.queries, args.base)
        return 0
    config: dict[str, Any] = {}
    if args.floor is not None:
        config["plans"] = {"candidate_floor": args.floor}
    results: dict[str, list[Lookup]] = {}
    for name in FILES:
        cases = load_cases(name)
        if cases is None:
            print(f"skipped: the plan-cache dev data is not at {DATA_DIR / 'plan-cache' / name}")
            continue
        print(f"== {name}: {len(cases)} stored plans")
        lookups = asyncio.run(run_dev(cases, config))
        results[name] = lookups
        by_domain: dict[str, list[Lookup]] = defaultdict(list)
        for lk in lookups:
            by_domain[lk.domain].append(lk)
        rows = [tally(lookups).row("all")]
        if len(by_domain) > 2:
            rows += [tally(v).row(k) for k, v in sorted(by_domain.items())]
        print_table(HEADERS, rows)
        if args.verbose:
            print_failures(lookups)
    if results:
        held_apart(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
