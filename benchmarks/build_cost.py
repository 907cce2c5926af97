"""Build cost: what one index build costs per memory under each candidate layout, and what it keeps.

Run ``python benchmarks/build_cost.py --file DIR/memories-100000.jsonl --n 25000`` (the file is an
``export --with-vectors`` file, e.g. the one ``benchmarks/scale.py`` writes). For every layout in
``--layouts`` a fresh shard of the memory collection (its real payload indexes, the layout's HNSW,
quantization and tiers) gets the first ``--n`` memories of the file, written as an import writes them
(real payloads, batches of 500), and then one ``optimize()``, the build an import runs per segment.
Printed side by side, per layout:

- the write and build cost per memory, wall and CPU (CPU is less sensitive to a loaded machine);
- dense recall@10 of the built index against exact search (float vectors, quantization ignored), on
  LoCoMo questions embedded with the local model: unfiltered, filtered on each ``kind`` (kinds are
  spread over the memories: 50% note, 30% fact, 10% event, 6% decision, 4% preference; the file's
  are all notes) and on ``created_at`` windows of 30% and 10% of the time range;
- the same unfiltered recall with rescoring (twice the candidates from the quantized vectors, rescored
  with the float ones: not what the store does today);
- the shard's size on disk.

The questions are split: the first half (dev) and the second (held apart) are reported apart.
The layouts are in ``LAYOUTS`` below; ``benchmarks/locomo.py --layout NAME`` measures R@10 under one.
Absolute times are noisy on a shared machine: compare the rows of one run. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA_DIR, print_table

LOCOMO = DATA_DIR / "locomo" / "locomo-dev.json"
KINDS = (("note", 0.5), ("fact", 0.3), ("event", 0.1), ("decision", 0.06), ("preference", 0.04))


@dataclass(frozen=True)
class Candidate:
    """A layout to measure: the storage layout and which payload indexes get payload-aware HNSW links."""

    layout: dict[str, Any]
    hnsw_fields: tuple[str, ...] = ("kind", "tags", "files", "created_at")


LAYOUTS: dict[str, Candidate] = {
    "current": Candidate({}),
    "no-kind-links": Candidate({}, ("tags", "files", "created_at")),
    "time-links-only": Candidate({}, ("created_at",)),
    "no-payload-links": Candidate({}, ()),
    "payload-m8": Candidate({"payload_m": 8}, ("created_at",)),
    "ef64": Candidate({"hnsw_ef_construct": 64}, ("created_at",)),
    "m8-ef64": Candidate({"hnsw_m": 8, "hnsw_ef_construct": 64}, ("created_at",)),
    "1-thread": Candidate({"indexing_threads": 1}, ("created_at",)),
    "int8": Candidate({"quantization": "int8"}, ("created_at",)),
    "no-quantization": Candidate({"quantization": None, "quantized": None}, ("created_at",)),
    "vectors-in-ram": Candidate({"vectors": "pinned"}, ("created_at",)),
}


def spec_of(name: str) -> Any:
    """The memory collection's spec under layout ``name``."""
    from amplifier_module_tool_agent_memory.memory.service import MEMORIES

    cand = LAYOUTS[name]
    indexes = tuple(replace(ix, hnsw=ix.field in cand.hnsw_fields) for ix in MEMORIES.indexes)
    return replace(MEMORIES, indexes=indexes, layout=replace(MEMORIES.layout, **cand.layout))


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _points(path: Path, n: int) -> list[tuple[str, dict[str, list[float]], dict[str, Any]]]:
    """The first ``n`` memories of the file as an import writes them (payloads built by the importer)."""
    from amplifier_module_tool_agent_memory.maintenance.transfer import parse_line
    from amplifier_module_tool_agent_memory.memory.importing import MemoryImporter
    from amplifier_module_tool_agent_memory.memory.ranking import CTX
    from amplifier_module_tool_agent_memory.store.contract import DENSE

    rng = random.Random(11)
    names, weights = zip(*KINDS, strict=True)
    builder = MemoryImporter(None, None, 0)  # type: ignore[arg-type]  # only its record-to-memory step
    out = []
    with open(path, encoding="utf-8") as fh:
        for _, text in zip(range(n), fh, strict=False):
            line = parse_line(text)
            record = line.record.model_copy(update={"kind": rng.choices(names, weights)[0]})
            memory = builder._memory(record)
            assert line.vectors is not None
            out.append((record.id, {DENSE: list(line.vectors[0]), CTX: list(line.vectors[1])}, memory.to_payload()))
    return out


def _queries(count: int) -> list[list[float]]:
    from amplifier_module_tool_agent_memory.config import parse_config
    from amplifier_module_tool_agent_memory.embeddings.providers import get_embedder

    data = json.loads(LOCOMO.read_text())
    questions = list(dict.fromkeys(str(q["question"]) for s in data for q in s["qa"] if q.get("question")))
    random.Random(7).shuffle(questions)
    embedder = get_embedder(parse_config({}).embeddings)
    return [embedder.embed_query(q) for q in questions[:count]]


def _filters(points: list[Any]) -> dict[str, Any]:
    from datetime import datetime

    from amplifier_module_tool_agent_memory.store.query import Filter, Match, Range

    stamps = sorted(datetime.fromisoformat(p[2]["created_at"]) for p in points)
    out: dict[str, Any] = {"none": None}
    for kind, _ in KINDS:
        out[f"kind={kind}"] = Filter(must=(Match("kind", kind),))
    for share in (0.3, 0.1):
        start = stamps[int(len(stamps) * (0.5 - share / 2))]
        end = stamps[int(len(stamps) * (0.5 + share / 2))]
        out[f"time {int(share * 100)}%"] = Filter(must=(Range("created_at", gte=start, lt=end),))
    return out


def _search(shard: Any, vector: list[float], flt: Any, exact: bool, rescore: bool = False) -> list[str]:
    """Top 10 ids: exact (float vectors), or as the store searches (``rescore``: quantized candidates
    rescored with the float vectors, twice as many)."""
    import qdrant_edge as qe

    from amplifier_module_tool_agent_memory.store.contract import DENSE
    from amplifier_module_tool_agent_memory.store.edge_query import to_filter

    params = None
    if exact:
        params = qe.SearchParams(exact=True, quantization=qe.QuantizationSearchParams(ignore=True))
    elif rescore:
        params = qe.SearchParams(quantization=qe.QuantizationSearchParams(rescore=True, oversampling=2.0))
    request = qe.QueryRequest(
        query=qe.Query.Nearest(vector, using=DENSE), filter=to_filter(flt), limit=10, params=params, with_payload=False
    )
    return [str(p.id) for p in shard.query(request)]


def _recall(shard: Any, queries: list[list[float]], flt: Any, rescore: bool = False) -> float:
    hits = total = 0
    for q in queries:
        truth = set(_search(shard, q, flt, exact=True))
        hits += len(truth & set(_search(shard, q, flt, exact=False, rescore=rescore)))
        total += len(truth)
    return hits / max(1, total)


def measure(name: str, points: list[Any], queries: list[list[float]], work: Path) -> dict[str, Any]:
    """Write the points into a fresh shard of layout ``name``, build it once; costs and recalls."""
    import qdrant_edge as qe

    from amplifier_module_tool_agent_memory.store.edge_settings import create_index_operation, edge_config

    spec = spec_of(name)
    path = work / name
    shutil.rmtree(path, ignore_errors=True)
    shard = qe.EdgeShard.create(str(path), edge_config(spec, len(points[0][1]["dense"])))
    for index in spec.indexes:
        shard.update(create_index_operation(spec, index))
    cpu, started = _cpu_s(), time.perf_counter()
    for i in range(0, len(points), 500):
        batch = points[i : i + 500]
        shard.update(qe.UpdateOperation.upsert_points([qe.Point(pid, dict(v), p) for pid, v, p in batch]))
    write_s, write_cpu = time.perf_counter() - started, _cpu_s() - cpu
    cpu, started = _cpu_s(), time.perf_counter()
    shard.optimize()
    build_s, build_cpu = time.perf_counter() - started, _cpu_s() - cpu
    n = len(points)
    half = len(queries) // 2
    out: dict[str, Any] = {
        "layout": name,
        "write_ms": 1000 * write_s / n,
        "write_cpu_ms": 1000 * write_cpu / n,
        "build_ms": 1000 * build_s / n,
        "build_cpu_ms": 1000 * build_cpu / n,
        "indexed": int(shard.info().indexed_vectors_count),
    }
    for label, flt in _filters(points).items():
        out[f"dev {label}"] = _recall(shard, queries[:half], flt)
        out[f"held {label}"] = _recall(shard, queries[half:], flt)
    out["dev rescored"] = _recall(shard, queries[:half], None, rescore=True)
    out["held rescored"] = _recall(shard, queries[half:], None, rescore=True)
    shard.close()
    out["disk_mb"] = sum(f.stat().st_blocks * 512 for f in path.rglob("*") if f.is_file()) / 2**20
    shutil.rmtree(path, ignore_errors=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, required=True, help="an export --with-vectors file")
    parser.add_argument("--n", type=int, default=25_000)
    parser.add_argument("--layouts", default="current,no-kind-links,time-links-only,no-payload-links")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--work-dir", type=Path, default=None)
    opts = parser.parse_args()
    if not LOCOMO.exists() or not opts.file.exists():
        print(f"skipped: {LOCOMO} or {opts.file} is missing")
        return
    started = time.perf_counter()
    points = _points(opts.file, opts.n)
    queries = _queries(opts.queries)
    print(f"{len(points)} memories, {len(queries)} queries read in {time.perf_counter() - started:.0f} s", flush=True)
    work = Path(tempfile.mkdtemp(prefix="build-cost-", dir=opts.work_dir))
    rows = []
    try:
        for name in opts.layouts.split(","):
            row = measure(name, points, queries, work)
            print(json.dumps(row), flush=True)
            rows.append(row)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    labels = [*_filters(points), "rescored"]
    print(f"\nOne build of {opts.n} memories (one segment), per memory; recall@10 of dense search vs exact")
    print_table(
        ["layout", "write ms", "write CPU ms", "build ms", "build CPU ms", "disk MB"],
        [[r["layout"], *(round(r[k], 3) for k in ("write_ms", "write_cpu_ms", "build_ms", "build_cpu_ms", "disk_mb"))]
         for r in rows],
    )
    for split in ("dev", "held"):
        print(f"\nrecall@10, {split} queries")
        print_table(["layout", *labels], [[r["layout"], *(round(r[f"{split} {k}"], 3) for k in labels)] for r in rows])


if __name__ == "__main__":
    main()
