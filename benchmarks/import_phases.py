"""Import with vectors, phase by phase: what each step of writing one memory costs, side by side.

Run ``python benchmarks/import_phases.py --file DIR/memories-10000.jsonl --n 5000`` (an ``export
--with-vectors`` file, e.g. the one ``benchmarks/scale.py`` writes). The first ``--n`` lines go
through the steps an import runs, each step timed on its own over batches of 256 (the import's
batch): the check pass's validation, the write pass's validation (vectors as lists), redaction and
the stored memory, its payload (sealed), the engine's points, the journal's records, and the engine's
update (into a fresh shard of the memory collection, no index build: see build_cost.py for that).
Printed: CPU microseconds per memory (process CPU, every thread), median and p95 over the batches.
Absolute times are noisy on a shared machine: compare the rows of one run. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import p50_p95, print_table

BATCH = 256


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    import qdrant_edge as qe

    from amplifier_module_tool_agent_memory.maintenance.transfer import parse_line
    from amplifier_module_tool_agent_memory.memory.importing import MemoryImporter
    from amplifier_module_tool_agent_memory.memory.ranking import CTX
    from amplifier_module_tool_agent_memory.memory.service import MEMORIES
    from amplifier_module_tool_agent_memory.store.contract import DENSE, sealed
    from amplifier_module_tool_agent_memory.store.edge_settings import create_index_operation, edge_config
    from amplifier_module_tool_agent_memory.store.journal import Change, _encode

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, required=True)
    parser.add_argument("--n", type=int, default=5000)
    opts = parser.parse_args()
    if not opts.file.exists():
        print(f"skipped: {opts.file} is missing")
        return
    with open(opts.file, encoding="utf-8") as fh:
        texts = [line for _, line in zip(range(opts.n), fh, strict=False)]
    work = Path(tempfile.mkdtemp(prefix="import-phases-"))
    shard = qe.EdgeShard.create(str(work / "memories"), edge_config(MEMORIES, 384))
    for index in MEMORIES.indexes:
        shard.update(create_index_operation(MEMORIES, index))
    builder = MemoryImporter(None, None, 0)  # type: ignore[arg-type]  # only its record-to-memory step
    costs: dict[str, list[float]] = {}

    def each(name: str, step: Callable[..., Any], *columns: Sequence[Any]) -> list[Any]:
        """``step`` over each memory of the batch (one argument per column), its CPU time a memory noted."""
        started = _cpu_s()
        out = [step(*args) for args in zip(*columns, strict=True)]
        costs.setdefault(name, []).append((_cpu_s() - started) / len(out) * 1e6)
        return out

    def upsert(points: list[Any]) -> None:
        started = _cpu_s()
        shard.update(qe.UpdateOperation.upsert_points(points))
        costs.setdefault("the engine's update (upsert_points)", []).append((_cpu_s() - started) / len(points) * 1e6)

    try:
        for start in range(0, len(texts), BATCH):
            batch = texts[start : start + BATCH]
            each("check pass: validate a line (vectors as arrays)", lambda t: parse_line(t, False), batch)
            lines = each("write pass: validate it again (vectors as lists)", parse_line, batch)
            memories = each("redact, build the stored memory", lambda line: builder._memory(line.record), lines)
            payloads = each("its payload, sealed (checksummed)", lambda m: sealed(m.to_payload()), memories)
            vectors = [{DENSE: line.vectors[0], CTX: line.vectors[1]} for line in lines]
            ids = [line.record.id for line in lines]
            changes = [Change("upsert", (i,), p, v) for i, p, v in zip(ids, payloads, vectors, strict=True)]
            each("the journal's records (encoded)", _encode, range(len(changes)), changes)
            upsert(each("the engine's points (qe.Point)", qe.Point, ids, vectors, payloads))
    finally:
        shard.close()
        shutil.rmtree(work, ignore_errors=True)
    rows = [[name, *(round(v) for v in p50_p95(values))] for name, values in costs.items()]
    total = [sum(p50_p95(v)[0] for v in costs.values())]
    print(f"\n{len(texts)} memories with vectors, CPU microseconds a memory over batches of {BATCH}")
    print_table(["step", "median us", "p95 us"], [*rows, ["sum of the medians", round(total[0]), ""]])


if __name__ == "__main__":
    main()
