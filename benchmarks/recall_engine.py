"""Recall's engine work with the keyword stages run beside the query embedding, against the one fused query.

Recall's fused query (``memory/ranking.py`` ``build_request``: dense, ctx dense, BM25 content, BM25 ctx_text, RRF)
waits for the prompt's embedding, but its two keyword stages need only the prompt's text. This measures, in one
process on the 10k store of ``benchmarks/recall.py`` (query cache off, sides alternating per prompt):

* **fused** (what recall does): embed, then one fused query reading the 50 candidates' ranking fields;
* **apart**: a helper thread runs the two keyword stages (one batch, no payloads) while this thread embeds; then the
  two dense stages (one batch), RRF in Python with the engine's arithmetic (float32, 1 / (k + rank)), and one read of
  the 50 fused candidates' ranking fields. The engine's cheapest calls for it (batches, no payloads in the stages).

Printed: the path's wall time and this thread's CPU time, p50 / p95, by prompt length; and the fusion's identity on
every prompt (the same score at every rank; members differ only among candidates tied at the 50th score, which the
engine orders by a per-process hash). Run: ``python benchmarks/recall_engine.py --store-dir DIR``.

``--depths 50,25`` instead measures recall's work after the embedding (``Recaller.candidates`` with the prompt's vector
computed beforehand: the fused query, rerank, chains, the read of the 10 and their coverage) at each candidate depth
(``memory/recall.py`` ``_DEPTH``), the depths alternating per prompt, a ``--pause-ms`` pause before each call (a turn
follows the user's idle time, and work after a pause runs slower). ``--keyword-words whole,first:16`` does the same
with the texts recall's keyword stages could search (``memory/recall.py`` ``keyword_text``;
``benchmarks/recall_keyword_text.py``).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from _common import DATA_DIR, p50_p95

DATA = DATA_DIR / "locomo" / "locomo-dev.json"
FILL = "recall-fill-10000"
LENGTHS = (15, 60)


def prompts(per_length: int) -> dict[int, list[str]]:
    """LoCoMo dev questions (<= 15 words) and the same padded with other questions to 60 words, as recall.py does."""
    samples = json.loads(DATA.read_text())
    asked = [str(q["question"]) for s in samples for q in s["qa"] if q.get("category") in (1, 2, 3, 4)]
    rng = random.Random(18)
    picked = rng.sample(asked, per_length)
    out: dict[int, list[str]] = {15: list(picked)}
    padded = []
    for q in picked:
        words = q.split()
        while len(words) < 60:
            words += rng.choice(asked).split()
        padded.append(" ".join(words[:60]))
    out[60] = padded
    return out


def rrf(lists: list[list[Any]], k: int, limit: int) -> list[tuple[Any, float]]:
    """Reciprocal-rank fusion as Qdrant computes it: float32 1 / (k + rank), summed in stage order."""
    import numpy as np

    places: dict[Any, int] = {}
    rows: list[list[float]] = []
    points: list[Any] = []
    terms = [float(np.float32(1.0) / np.float32(rank + k)) for rank in range(max(map(len, lists), default=0))]
    for stage, found in enumerate(lists):
        for rank, point in enumerate(found):
            row = places.get(point.id)
            if row is None:
                row = places[point.id] = len(points)
                points.append(point)
                rows.append([0.0] * len(lists))
            rows[row][stage] = terms[rank]
    table = np.asarray(rows, dtype=np.float32)
    total = table[:, 0].copy()
    for stage in range(1, len(lists)):
        total += table[:, stage]  # float32 adds in stage order: the engine's rounding (adding 0 changes nothing)
    best = np.argsort(-total, kind="stable")[:limit]
    return [(points[i], float(total[i])) for i in best]


class Paths:
    """The two ways to the 50 ranked candidates of one prompt, on one open store."""

    def __init__(self, root: Path) -> None:
        from amplifier_module_tool_agent_memory.config import parse_config
        from amplifier_module_tool_agent_memory.identity import ResolvedIdentity
        from amplifier_module_tool_agent_memory.runtime import AgentMemory

        cfg = parse_config({"storage_root": str(root), "embeddings": {"query_cache_size": 0}})
        self.runtime = AgentMemory(cfg, ResolvedIdentity(FILL, "config"))
        self.svc = self.runtime.memory()
        self.svc.settle(60)
        self.words = cfg.recall.query_words
        self.helper = ThreadPoolExecutor(1, thread_name_prefix="keyword-stages")

    def _vec(self, prompt: str) -> list[float]:
        from amplifier_module_tool_agent_memory.memory.recall import embedding_text

        return list(self.svc.embedder.embed_query(embedding_text(prompt, self.words)))

    def fused(self, prompt: str) -> list[tuple[str, float]]:
        from amplifier_module_tool_agent_memory.memory.ranking import RANK_FIELDS, build_request

        request = replace(build_request(prompt, self._vec(prompt), None, self.svc.params), with_payload=RANK_FIELDS)
        return [(str(p.id), p.score) for p in self.svc.coll.query(request)]

    def _batch(self, queries: list[Any]) -> list[list[Any]]:
        import qdrant_edge as qe

        requests = [
            qe.QueryRequest(limit=self.svc.params.prefetch_limit, query=q, with_payload=False, with_vector=False)
            for q in queries
        ]
        return self.svc.coll.shard.query_batch(qe.QueryBatchRequest(requests))

    def _keyword(self, prompt: str) -> list[list[Any]]:
        import qdrant_edge as qe

        params = qe.Bm25Params(k=self.svc.params.bm25_k, b=self.svc.params.bm25_b)
        return self._batch([qe.TextQuery(field, prompt, params) for field in ("content", "ctx_text")])

    def apart(self, prompt: str) -> list[tuple[str, float]]:
        import qdrant_edge as qe

        from amplifier_module_tool_agent_memory.memory.ranking import RANK_FIELDS

        keyword = self.helper.submit(self._keyword, prompt)
        vec = self._vec(prompt)
        dense = self._batch([qe.Query.Nearest(vec, using=name) for name in ("dense", "ctx")])
        fused = rrf(dense + keyword.result(), self.svc.params.rrf_k, self.svc.params.candidates)
        self.svc.coll.shard.retrieve([p.id for p, _ in fused], with_payload=list(RANK_FIELDS), with_vector=False)
        return [(str(p.id), score) for p, score in fused]

    def close(self) -> None:
        self.helper.shutdown()
        self.runtime.close()


class CachedVectors:
    """The embedder's query vectors computed beforehand, so a timed recall holds only the engine's work after it."""

    def __init__(self, embedder: Any, texts: list[str]) -> None:
        self.vectors = {text: embedder.embed_query(text) for text in texts}

    def embed_query(self, text: str) -> list[float]:
        return self.vectors[text]


def by_depth(root: Path, by_length: dict[int, list[str]], depths: list[int], rounds: int, pause_ms: float) -> None:
    """Recall's work after the embedding at each depth, alternating per prompt; wall and thread CPU p50 / p95."""
    from amplifier_module_tool_agent_memory.memory import recall

    def at(depth: int) -> None:
        recall._DEPTH = depth

    alternating(root, by_length, {f"depth {d:>3}": lambda d=d: at(d) for d in depths}, rounds, pause_ms)


def by_keyword_text(
    root: Path, by_length: dict[int, list[str]], specs: list[str], rounds: int, pause_ms: float
) -> None:
    """Recall's work after the embedding with its keyword stages searching each text of the prompt (``whole``,
    ``first:N``, ``topic:N``, ``plain:N``: see ``benchmarks/recall_keyword_text.py``), alternating per prompt."""
    from recall_keyword_text import text_of

    from amplifier_module_tool_agent_memory.memory import recall

    texts = {spec: text_of(spec) for spec in specs}

    def text(spec: str) -> None:
        recall.keyword_text = texts[spec]

    alternating(root, by_length, {f"keywords {s:>8}": lambda s=s: text(s) for s in specs}, rounds, pause_ms)


def alternating(
    root: Path, by_length: dict[int, list[str]], sides: dict[str, Any], rounds: int, pause_ms: float
) -> None:
    """Recall's work after the embedding (``Recaller.candidates``, the query vector computed beforehand) on each side
    (a setter of the module's knob), the sides alternating per prompt; wall and thread CPU p50 / p95."""
    from amplifier_module_tool_agent_memory.config import parse_config
    from amplifier_module_tool_agent_memory.identity import ResolvedIdentity
    from amplifier_module_tool_agent_memory.memory import recall
    from amplifier_module_tool_agent_memory.runtime import AgentMemory

    cfg = parse_config({"storage_root": str(root), "embeddings": {"query_cache_size": 0}})
    runtime = AgentMemory(cfg, ResolvedIdentity(FILL, "config"))
    svc = runtime.memory()
    svc.settle(60)
    texts = [recall.embedding_text(p, cfg.recall.query_words) for t in by_length.values() for p in t]
    svc.embedder = CachedVectors(svc.embedder, texts)  # type: ignore[assignment]
    recaller = recall.Recaller(svc, cfg.recall)
    names = list(sides)
    wall: dict[tuple[str, int], list[float]] = {}
    cpu: dict[tuple[str, int], list[float]] = {}
    for round_no in range(rounds):
        for length, prompts_of in by_length.items():
            for i, prompt in enumerate(prompts_of):
                shift = (i + round_no) % len(names)
                for name in names[shift:] + names[:shift]:
                    sides[name]()
                    time.sleep(pause_ms / 1000)
                    started, started_cpu = time.perf_counter(), time.thread_time()
                    recaller.candidates(prompt)
                    wall.setdefault((name, length), []).append((time.perf_counter() - started) * 1000)
                    cpu.setdefault((name, length), []).append((time.thread_time() - started_cpu) * 1000)
    runtime.close()
    print(
        f"10k memories, recall's work after the embedding, {rounds} rounds, sides alternating, {pause_ms:.0f} ms "
        "pause before each; ms, p50 / p95:"
    )
    for length in by_length:
        for name in names:
            w, c = p50_p95(wall[(name, length)]), p50_p95(cpu[(name, length)])
            print(f"  <= {length} words, {name}: wall {w[0]:.2f} / {w[1]:.2f}, cpu {c[0]:.2f} / {c[1]:.2f}")
    print("(timings on a shared machine are noisy: compare the sides of one run)")


def same_fusion(engine: list[tuple[str, float]], mine: list[tuple[str, float]]) -> bool:
    """The same score at every rank, and the same members but for those tied at the last score (the cut)."""
    if [round(s, 7) for _, s in engine] != [round(s, 7) for _, s in mine]:
        return False
    cut = engine[-1][1] if engine else 0.0
    return all(abs(s - cut) < 1e-9 for i, s in set(engine) ^ set(mine))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store-dir", help="the folder benchmarks/recall.py filled (its 10k store)")
    parser.add_argument("--per-length", type=int, default=60, help="prompts per length")
    parser.add_argument("--rounds", type=int, default=2, help="rounds over the prompts")
    parser.add_argument("--depths", help="instead: recall's work after the embedding at these depths, e.g. 50,25")
    parser.add_argument(
        "--keyword-words",
        help="instead: recall's work after the embedding with these keyword-stage texts, e.g. whole,first:16,topic:8 "
        "(whole, first:N, topic:N or plain:N: see benchmarks/recall_keyword_text.py)",
    )
    parser.add_argument(
        "--pause-ms", type=float, default=20.0, help="with --depths / --keyword-words: the pause before each call"
    )
    args = parser.parse_args()
    if not DATA.exists():
        print(f"SKIP: LoCoMo data not found at {DATA} (it lives in ../shared/data, outside the repository)")
        return 0
    if not args.store_dir or not (Path(args.store_dir) / FILL).exists():
        print("SKIP: --store-dir must name a folder benchmarks/recall.py filled (run it with --store-dir first)")
        return 0
    if args.depths:
        by_depth(
            Path(args.store_dir),
            prompts(args.per_length),
            [int(d) for d in args.depths.split(",")],
            args.rounds,
            args.pause_ms,
        )
        return 0
    if args.keyword_words:
        by_keyword_text(
            Path(args.store_dir), prompts(args.per_length), args.keyword_words.split(","), args.rounds, args.pause_ms
        )
        return 0
    paths = Paths(Path(args.store_dir))
    sides = {"fused": paths.fused, "apart": paths.apart}
    wall: dict[tuple[str, int], list[float]] = {}
    cpu: dict[tuple[str, int], list[float]] = {}
    differing = ordered = 0
    by_length = prompts(args.per_length)
    for round_no in range(args.rounds):
        for length, texts in by_length.items():
            for i, prompt in enumerate(texts):
                order = list(sides.items()) if (i + round_no) % 2 == 0 else list(reversed(sides.items()))
                answers = {}
                for name, path in order:
                    time.sleep(0.005)  # a pause between turns, as a user's
                    started, started_cpu = time.perf_counter(), time.thread_time()
                    answers[name] = path(prompt)
                    wall.setdefault((name, length), []).append((time.perf_counter() - started) * 1000)
                    cpu.setdefault((name, length), []).append((time.thread_time() - started_cpu) * 1000)
                if round_no == 0:
                    differing += not same_fusion(answers["fused"], answers["apart"])
                    ordered += answers["fused"] != answers["apart"]
    paths.close()
    print(
        f"10k memories, {args.per_length} prompts a length x {args.rounds} rounds, sides alternating; ms, "
        f"p50 / p95 (threads alive: {threading.active_count()}):"
    )
    for length in by_length:
        cells = []
        for name in sides:
            w, c = p50_p95(wall[(name, length)]), p50_p95(cpu[(name, length)])
            cells.append(f"{name} wall {w[0]:.2f} / {w[1]:.2f}, cpu {c[0]:.2f} / {c[1]:.2f}")
        print(f"  <= {length} words: " + "; ".join(cells))
        gain = statistics.median(wall[("apart", length)]) - statistics.median(wall[("fused", length)])
        print(f"    apart - fused, wall p50: {gain:+.2f}")
    total = sum(len(t) for t in by_length.values())
    print(
        f"fusion: {differing} of {total} prompts differ beyond ties at the cut (scores at every rank and members); "
        f"{ordered} differ in the order of tied candidates"
    )
    print("(timings on a shared machine are noisy: compare the sides of one run)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
