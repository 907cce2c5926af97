"""Recall without being asked (issue 18), measured on LoCoMo dev through the real loop-basic orchestrator.

Every turn of each conversation of ``../shared/data/locomo/locomo-dev.json`` is stored through the real
``memory_store`` tool, one identity per conversation (as benchmarks/locomo.py does). Then each question
is one user turn of a real amplifier-core session: loop-basic (installed by ``make install`` from
``../shared/vendor``), our module mounted from its folder, and a provider that records every request it
is sent (the LLM's test double, from tests/amplifier/amplifier_stack). Read from the recorded requests:

* **evidence injected**: the share of a conversation's own questions (categories 1-4) whose injected
  block cites at least one of its evidence turns by memory id;
* **tokens per request** of the injected text (characters / 4, the module's counter);
* **foreign nothing**: the share of *another* conversation's questions, its speakers renamed to this
  conversation's (so the people match and the content does not), for which nothing at all is injected;
* **latency** the hook adds to the first request of a turn (the wait at ``provider:request``, and the
  recall's own work), by prompt length, with the query cache off; prompts longer than a question are the
  question followed by other questions of the conversation, to 30, 60 and 120 words. ``--latency-fill``
  adds a store of that many memories (default 10,000) measured the same way.

The gate's bars are tuned with ``--tune`` on the TUNE half of the conversations (a grid over the cosine's weight and the
relevance bar, from one recall per question) and reported on the HELD half. Run:
``python benchmarks/recall.py`` (about 10 minutes on 2 loaded cores). Skips cleanly without the data or
without loop-basic.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import gc
import importlib.util
import json
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from _common import DATA_DIR, REPO, p50_p95
from locomo import sessions, turn_content

DATA = DATA_DIR / "locomo" / "locomo-dev.json"
STACK = REPO / "tests" / "amplifier" / "amplifier_stack"
# The folder of the package this process imports (a --base run puts another revision's first on the path).
_SPEC = importlib.util.find_spec("amplifier_module_tool_agent_memory")
MODULE_DIR = Path(_SPEC.origin).parent.parent if _SPEC and _SPEC.origin else REPO / "modules" / "tool-agent-memory"
CATEGORIES = (1, 2, 3, 4)
# Tune on one half of the dev conversations, report the other half beside it.
TUNE = ("conv-26", "conv-30", "conv-42")
HELD = ("conv-41", "conv-43")
_ID = re.compile(r"\[([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\]")
LENGTHS = (30, 60, 120)


def questions(sample: dict[str, Any]) -> list[dict[str, Any]]:
    """Questions of categories 1-4 with evidence."""
    return [q for q in sample["qa"] if q.get("category") in CATEGORIES and q.get("evidence")]


def rename(text: str, source: dict[str, Any], target: dict[str, Any]) -> str:
    """``text`` with ``source``'s two speakers renamed to ``target``'s (at once, so a swap cannot collide)."""
    names = {
        source["conversation"]["speaker_a"]: target["conversation"]["speaker_a"],
        source["conversation"]["speaker_b"]: target["conversation"]["speaker_b"],
    }
    pattern = re.compile(r"\b(" + "|".join(re.escape(n) for n in names) + r")\b")
    return pattern.sub(lambda m: names[m.group(1)], text)


def foreign_questions(sample: dict[str, Any], others: Iterable[dict[str, Any]]) -> list[str]:
    """The other conversations' questions, their speakers renamed to ``sample``'s."""
    return [rename(str(q["question"]), other, sample) for other in others for q in questions(other)]


async def store_conversation(sample: dict[str, Any], root: Path) -> dict[str, str]:
    """Store every turn under the conversation's identity through memory_store; dia_id -> memory id."""
    from amplifier_core.testing import MockCoordinator

    import amplifier_module_tool_agent_memory as agent_memory

    ids_file = root / f"{sample['sample_id']}.ids.json"
    if ids_file.exists():
        loaded: dict[str, str] = json.loads(ids_file.read_text())
        return loaded
    coordinator = MockCoordinator()
    cleanup = await agent_memory.mount(coordinator, {"storage_root": str(root), "agent_identity": identity(sample)})
    store = coordinator.mount_points["tools"]["memory_store"]
    ids: dict[str, str] = {}
    for session in sessions(sample["conversation"]):
        for turn in session:
            result = await store.execute({"content": turn_content(turn)})
            if not result.success:
                raise RuntimeError(f"memory_store failed: {result.error}")
            ids[turn["dia_id"]] = result.output["id"]
    await cleanup()
    del store, coordinator
    gc.collect()
    ids_file.write_text(json.dumps(ids))
    return ids


def stored_halves(root: Path) -> tuple[dict[str, list[dict[str, Any]]], dict[str, dict[str, str]]] | None:
    """TUNE's and HELD's conversations and the ids of their turns stored in ``root`` (this script's --store-dir), or
    None, saying why, when the data or the stored conversations are missing (the scripts that re-read them skip)."""
    if not DATA.exists():
        print(f"SKIP: LoCoMo data not found at {DATA} (it lives in ../shared/data, outside the repository)")
        return None
    if not all((root / f"{c}.ids.json").exists() for c in TUNE + HELD):
        print(f"SKIP: no stored conversations in {root}: run benchmarks/recall.py --store-dir {root} first")
        return None
    samples = {s["sample_id"]: s for s in json.loads(DATA.read_text())}
    halves = {"tune": [samples[c] for c in TUNE], "held": [samples[c] for c in HELD]}
    return halves, {c: json.loads((root / f"{c}.ids.json").read_text()) for c in TUNE + HELD}


def gate_line() -> str:
    """The configured gate and block budget, as the scripts that re-read the stored halves print them first."""
    from amplifier_module_tool_agent_memory.config import RecallConfig

    config = RecallConfig()
    gate = config.gate
    return (
        f"gate: coverage + {gate.cosine_weight} cosine >= {gate.min_relevance}; blocks of {config.budget_tokens} "
        "tokens; evidence injected / foreign nothing"
    )


def halves_cells(
    halves: dict[str, list[dict[str, Any]]], root: Path, ids: dict[str, dict[str, str]]
) -> str:
    """Evidence injected / foreign nothing of each half at the configured gate and budget, as printed columns (each own
    and renamed foreign question recalled once: :func:`measure_signals`)."""
    from amplifier_module_tool_agent_memory.config import RecallConfig

    config = RecallConfig()
    gate = config.gate
    cells = ""
    for half in halves.values():
        rows = [
            row for s in half for row in measure_signals(s, [o for o in half if o is not s], root, ids[s["sample_id"]])
        ]
        evidence, quiet = gate_figures(
            rows, lambda cov, cos: cov + gate.cosine_weight * cos >= gate.min_relevance, config.budget_tokens
        )
        cells += f"{evidence:>9.3f} /{quiet:>5.3f}"
    return cells


def identity(sample: dict[str, Any]) -> str:
    return f"locomo-{sample['sample_id']}"


# ------------------------------------------------------------------------------------------ tuning


def measure_signals(
    sample: dict[str, Any], others: list[dict[str, Any]], root: Path, ids: dict[str, str]
) -> list[dict[str, Any]]:
    """One recall per own and foreign question: each candidate's (coverage, cosine), ranked."""
    from amplifier_module_tool_agent_memory.config import parse_config
    from amplifier_module_tool_agent_memory.identity import ResolvedIdentity
    from amplifier_module_tool_agent_memory.memory.recall import Recaller
    from amplifier_module_tool_agent_memory.memory.recall import memory_view as view
    from amplifier_module_tool_agent_memory.runtime import AgentMemory

    cfg = parse_config({"storage_root": str(root)})
    runtime = AgentMemory(cfg, ResolvedIdentity(identity(sample), "config"))
    recaller = Recaller(runtime.memory(), cfg.recall)
    prompts = [(str(q["question"]), sorted({ids[e] for e in q["evidence"] if e in ids})) for q in questions(sample)]
    rows: list[dict[str, Any]] = []
    for own, batch in ((True, prompts), (False, [(t, []) for t in foreign_questions(sample, others)])):
        for text, wanted in batch:
            hits, matches, words = recaller.candidates(text)
            rows.append(
                {
                    "own": own,
                    "views": [view(h.id, h.payload) for h in hits[: cfg.recall.max_memories]],
                    "wanted": wanted,
                    "words": words,
                    "matches": matches,
                }
            )
    runtime.close()
    return rows


def dump_signals(halves: dict[str, list[dict[str, Any]]], root: Path, ids: dict[str, dict[str, str]], out: Path) -> int:
    """What recall read for every TUNE and HELD prompt (own and foreign): its content words, the block's memories and
    each candidate's (coverage, cosine), as JSON. Two runs' files are equal when a change kept every recalled block and
    every gate signal (then evidence / foreign-nothing need no re-measure)."""
    rows = {
        s["sample_id"]: measure_signals(s, [o for o in half if o is not s], root, ids[s["sample_id"]])
        for half in halves.values()
        for s in half
    }
    out.write_text(json.dumps(rows, sort_keys=True))
    print(f"wrote {sum(len(r) for r in rows.values())} prompts' signals to {out}")
    return 0


def gate_figures(
    rows: list[dict[str, Any]], relevant: Callable[[float, float], bool], shown: int
) -> tuple[float, float]:
    """(evidence injected among own questions, nothing injected among foreign ones) when anything is injected
    for a prompt with one candidate whose (coverage, cosine) is ``relevant``; the evidence must be among the
    memories the block shows within its token budget (``shown``)."""
    from amplifier_module_tool_agent_memory.amplifier.recall_hooks import RECALL_INTRO, RECALL_TAG
    from amplifier_module_tool_agent_memory.memory.recall import HOW_TO_MORE, render_block

    intro = RECALL_INTRO.format(more=HOW_TO_MORE)

    def passes(r: dict[str, Any]) -> bool:
        return r["words"] >= 1 and any(relevant(cov, cos) for cov, cos in r["matches"])

    own = [r for r in rows if r["own"]]
    foreign = [r for r in rows if not r["own"]]
    hit = 0
    for r in own:
        if passes(r):
            _, ids = render_block(RECALL_TAG, intro, r["views"], shown)
            hit += bool(set(ids) & set(r["wanted"]))
    quiet = sum(1 for r in foreign if not passes(r))
    return hit / max(1, len(own)), quiet / max(1, len(foreign))


def best_on_tune(
    rows: list[dict[str, Any]], gates: dict[Any, Callable[[float, float], bool]], shown: int, floor: float
) -> Any:
    """The key of the gate with the most evidence injected on TUNE while >= ``floor`` of foreign prompts get nothing."""
    scored = [(gate_figures(rows, relevant, shown), key) for key, relevant in gates.items()]
    allowed = [(figures, key) for figures, key in scored if figures[1] >= floor]
    if not allowed:
        raise SystemExit(f"no gate reaches {floor:.2f} foreign-nothing on TUNE")
    return max(allowed, key=lambda item: item[0])[1]


def tune(rows_by_half: dict[str, list[dict[str, Any]]], shown: int, floor: float) -> tuple[float, float]:
    """Tune the gate (cosine weight and relevance bar) on TUNE; print it, and single signals, on both halves."""
    rows = rows_by_half["tune"]
    bars = [i / 40 for i in range(0, 121)]

    def joint(weight: float, bar: float) -> Callable[[float, float], bool]:
        return lambda cov, cos: cov + weight * cos >= bar

    weight, bar = best_on_tune(rows, {(w / 4, b): joint(w / 4, b) for w in range(0, 13) for b in bars}, shown, floor)
    coverage_bar = best_on_tune(rows, {b: (lambda cov, cos, b=b: cov >= b) for b in bars[:41]}, shown, floor)
    cosine_bar = best_on_tune(rows, {b: (lambda cov, cos, b=b: cos >= b) for b in bars[:41]}, shown, floor)
    best_of_each = best_on_tune(
        rows,
        {(a, b): (lambda cov, cos, a=a, b=b: cov >= a and cos >= b) for a in bars[:41:2] for b in bars[:41]},
        shown,
        floor,
    )
    print(
        f"tuned on TUNE ({', '.join(TUNE)}): cosine_weight {weight:.2f}, min_relevance {bar:.3f}; "
        f"blocks of {shown} tokens; foreign-nothing floor {floor:.2f} on TUNE"
    )
    print(f"{'gate (each tuned on TUNE)':<48}{'TUNE evid.':>11}{'nothing':>9}{'HELD evid.':>12}{'nothing':>9}")
    cov_bars = {tuple(best_of_each)}
    rows_out: list[tuple[str, Callable[[float, float], bool]]] = [
        (f"one memory: coverage + {weight:.2f} cosine >= {bar:.3f}", joint(weight, bar)),
        (f"coverage only >= {coverage_bar:.3f}", lambda cov, cos: cov >= coverage_bar),
        (f"cosine only >= {cosine_bar:.3f}", lambda cov, cos: cos >= cosine_bar),
    ]
    for a, b in cov_bars:
        rows_out.append(
            (f"one memory: coverage >= {a:.3f} and cosine >= {b:.3f}", lambda cov, cos, a=a, b=b: cov >= a and cos >= b)
        )
    for name, relevant in rows_out:
        line = f"{name:<48}"
        for half in ("tune", "held"):
            evidence, quiet = gate_figures(rows_by_half[half], relevant, shown)
            line += f"{evidence:>11.3f}{quiet:>9.3f}" if half == "tune" else f"{evidence:>12.3f}{quiet:>9.3f}"
        print(line)
    return weight, bar


# ------------------------------------------------------------------------------------- end to end


def thread_cpu_ms() -> dict[str, float]:
    """This process's CPU milliseconds so far by thread group (Linux; empty elsewhere): the event loop's thread
    ("loop"), the other Python threads ("python": recall's workers, the warm-up), amplifier-core's tokio runtime, the
    engine's search pool, by thread name without its number; "<group> (q)": its time waiting for a core (schedstat)."""
    import os

    groups: dict[str, float] = {}
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return groups
    for tid in tids:
        try:
            name = Path(f"/proc/self/task/{tid}/comm").read_text().strip()
            ran_ns, waited_ns = map(int, Path(f"/proc/self/task/{tid}/schedstat").read_text().split()[:2])
        except (OSError, ValueError):
            continue  # a thread that ended meanwhile
        group = "loop" if tid == str(os.getpid()) else name.rstrip("0123456789").rstrip("-_")
        groups[group] = groups.get(group, 0.0) + ran_ns / 1e6
        # Time runnable but not running (waiting for a core): what the other threads and processes cost this one.
        groups[f"{group} (q)"] = groups.get(f"{group} (q)", 0.0) + waited_ns / 1e6
    return groups


class Session:
    """A real amplifier-core session under loop-basic with our module and the recording provider."""

    def __init__(self, root: Path, ident: str, config: dict[str, Any], threads: bool = False) -> None:
        # threads: also each thread group's CPU over the span (reading /proc costs the loop ~0.5 ms inside the span).
        self.threads = threads
        self.plan = {
            "session": {
                "orchestrator": {"module": "loop-basic"},
                "context": {"module": "context-compacting", "config": {"max_tokens": 10_000_000}},
            },
            "providers": [{"module": "provider-scripted"}],
            "tools": [
                {
                    "module": "tool-agent-memory",
                    "source": "local folder",
                    "config": {"storage_root": str(root), "agent_identity": ident, **config},
                }
            ],
        }
        self.events: list[dict[str, Any]] = []
        self.session: Any = None

    async def start(self) -> None:
        from amplifier_core import AmplifierSession, HookResult
        from amplifier_core.module_sources import ModuleNotFoundError as SourceNotFound

        class Folder:
            def resolve(self) -> Path:
                return MODULE_DIR

        class Sources:
            def resolve(self, module_id: str, source_hint: Any = None, profile_hint: Any = None) -> Folder:
                if module_id == "tool-agent-memory":
                    return Folder()
                raise SourceNotFound(module_id)

        self.session = AmplifierSession(self.plan)
        await self.session.coordinator.mount("module-source-resolver", Sources())

        async def record(event: str, data: dict[str, Any]) -> Any:
            self.events.append(dict(data))
            return HookResult(action="continue")

        self.session.coordinator.hooks.register("memory:recalled", record, priority=1000, name="bench-record")
        # When the turn's prompt was submitted (first of its handlers) and when the first request was let go
        # (last of its handlers, after recall's): their difference is what the request waited for, recall's
        # own wait and everything its worker threads took from the event loop's thread (the GIL) included.
        self.marks: dict[str, float] = {}

        # The process's CPU time over the same span (every thread: the loop's, recall's workers, the engine's and the
        # model's), which the load on a shared machine inflates far less than the wall time.
        async def submitted(event: str, data: dict[str, Any]) -> Any:
            self.marks.clear()
            self.marks["prompt"] = time.perf_counter()
            self.marks["prompt_cpu"] = time.process_time()
            if self.threads:
                self.spans = {"prompt": thread_cpu_ms()}
            return HookResult(action="continue")

        async def requested(event: str, data: dict[str, Any]) -> Any:
            if "request" not in self.marks:
                self.marks["request"] = time.perf_counter()
                self.marks["request_cpu"] = time.process_time()
                if self.threads:
                    self.spans["request"] = thread_cpu_ms()
            return HookResult(action="continue")

        hooks = self.session.coordinator.hooks
        hooks.register("prompt:submit", submitted, priority=-1000, name="bench-submitted")
        hooks.register("provider:request", requested, priority=1000, name="bench-requested")
        await self.session.initialize()

    def first_request_ms(self) -> float:
        """Milliseconds from the last turn's prompt:submit to its first request leaving provider:request."""
        return (self.marks["request"] - self.marks["prompt"]) * 1000

    def first_request_cpu_ms(self) -> float:
        """The process's CPU milliseconds over the same span."""
        return (self.marks["request_cpu"] - self.marks["prompt_cpu"]) * 1000

    def first_request_threads_ms(self) -> dict[str, float]:
        """Each thread group's CPU milliseconds over the same span (with ``threads``)."""
        before, after = self.spans["prompt"], self.spans["request"]
        return {group: ms - before.get(group, 0.0) for group, ms in after.items()}

    async def ask(self, prompt: str) -> tuple[str, dict[str, Any], float]:
        """One turn; (the injected text of its request, its memory:recalled event, the turn's wall ms)."""
        from amplifier_module_provider_scripted import say

        provider = self.session.coordinator.get("providers")["scripted"]
        provider.script = [say("ok")]
        provider.requests.clear()
        provider.background.clear()
        before = len(self.events)
        started = time.perf_counter()
        await self.session.execute(prompt)
        wall = (time.perf_counter() - started) * 1000
        [request] = [*provider.requests, *(r for r, _ in provider.background)]
        # What the hooks appended to this request only (the context keeps the earlier turns' prompts).
        injected = [str(m.content) for m in request.messages if "<agent-memory-" in str(m.content)]
        event = self.events[before] if len(self.events) > before else {}
        return "\n".join(injected), event, wall

    async def close(self) -> None:
        await self.session.cleanup()
        self.session = None
        gc.collect()


def tokens(text: str) -> int:
    from amplifier_module_tool_agent_memory.tokens import count_tokens

    return count_tokens(text)


async def end_to_end(
    sample: dict[str, Any], others: list[dict[str, Any]], root: Path, ids: dict[str, str], gate: dict[str, Any]
) -> dict[str, Any]:
    """Ask every own and foreign question through loop-basic; what the recorded requests carried."""
    session = Session(root, identity(sample), {"recall": {"gate": gate}, "embeddings": {"query_cache_size": 0}})
    await session.start()
    own_hits, own_tokens, foreign_quiet, foreign_tokens = [], [], [], []
    reasons: dict[str, int] = {}
    for q in questions(sample):
        text, event, _ = await session.ask(str(q["question"]))
        cited = set(_ID.findall(text))
        wanted = {ids[e] for e in q["evidence"] if e in ids}
        own_hits.append(bool(cited & wanted))
        own_tokens.append(tokens(text))
        reasons[str(event.get("reason"))] = reasons.get(str(event.get("reason")), 0) + 1
    for prompt in foreign_questions(sample, others):
        text, _, _ = await session.ask(prompt)
        foreign_quiet.append(not text)
        foreign_tokens.append(tokens(text))
    await session.close()
    return {
        "own_hits": own_hits,
        "own_tokens": own_tokens,
        "foreign_quiet": foreign_quiet,
        "foreign_tokens": foreign_tokens,
        "reasons": reasons,
    }


def report(name: str, results: list[dict[str, Any]]) -> None:
    hits = [h for r in results for h in r["own_hits"]]
    own_tokens = [t for r in results for t in r["own_tokens"]]
    injected = [t for t in own_tokens if t]
    quiet = [q for r in results for q in r["foreign_quiet"]]
    reasons: dict[str, int] = {}
    for r in results:
        for k, v in r["reasons"].items():
            reasons[k] = reasons.get(k, 0) + v
    p50, p95 = p50_p95([float(t) for t in injected]) if injected else (0.0, 0.0)
    print(
        f"{name:<6}{len(hits):>6}{statistics.fmean(hits):>10.3f}{len(injected) / max(1, len(own_tokens)):>10.3f}"
        f"{p50:>9.0f}{p95:>9.0f}{max(injected or [0]):>8}{len(quiet):>9}{statistics.fmean(quiet):>10.3f}"
        f"   {reasons}"
    )


# ------------------------------------------------------------------------------------ long prompts


def long_prompt_figures(
    sample: dict[str, Any],
    others: list[dict[str, Any]],
    root: Path,
    ids: dict[str, str],
    words: int,
    request_first: bool,
    query_words: int,
) -> tuple[list[bool], list[bool]]:
    """Each own and foreign question padded to ``words`` words with other conversations' questions (speakers
    renamed), the question first or last; recall with its query embedding reading ``query_words`` words (0: all).
    (own: evidence shown, foreign: nothing injected)."""
    from amplifier_module_tool_agent_memory.amplifier.recall_hooks import RECALL_INTRO, RECALL_TAG
    from amplifier_module_tool_agent_memory.config import parse_config
    from amplifier_module_tool_agent_memory.identity import ResolvedIdentity
    from amplifier_module_tool_agent_memory.memory.recall import HOW_TO_MORE, Recaller, render_block
    from amplifier_module_tool_agent_memory.runtime import AgentMemory

    cfg = parse_config(
        {"storage_root": str(root), "embeddings": {"query_cache_size": 0}, "recall": {"query_words": query_words}}
    )
    runtime = AgentMemory(cfg, ResolvedIdentity(identity(sample), "config"))
    recaller = Recaller(runtime.memory(), cfg.recall)
    filler = foreign_questions(sample, others)
    rng = random.Random(11)  # the same padding for every setting compared

    def padded(question: str) -> str:
        pad = longer("", filler, words - len(question.split()), rng).split()
        return " ".join([question, *pad] if request_first else [*pad, question])

    intro = RECALL_INTRO.format(more=HOW_TO_MORE)
    own: list[bool] = []
    for q in questions(sample):
        recalled = recaller.recall(padded(str(q["question"])))
        _, shown = render_block(RECALL_TAG, intro, recalled.memories, cfg.recall.budget_tokens)
        own.append(bool(set(shown) & {ids[e] for e in q["evidence"] if e in ids}))
    foreign = [not recaller.recall(padded(text)).memories for text in filler]
    runtime.close()
    return own, foreign


def long_prompts(halves: dict[str, list[dict[str, Any]]], root: Path, ids: dict[str, dict[str, str]]) -> None:
    """Evidence injected / foreign nothing for 30- and 60-word prompts, the query embedding bounded (the default
    ``recall.query_words``) and whole, side by side on both halves."""
    from amplifier_module_tool_agent_memory.config import RecallConfig

    bound = RecallConfig().query_words
    print(
        f"\nLong prompts (a question padded with other conversations' questions, speakers renamed), evidence "
        f"injected / foreign nothing, query embedding of the first {bound} words vs the whole prompt:"
    )
    print(f"{'half':<6}{'words':>6}  {'question':<9}{f'first {bound}':>16}{'whole':>16}")
    for name, half in halves.items():
        for words in LENGTHS[:2]:
            for request_first in (True, False):
                line = f"{name:<6}{words:>6}  {'first' if request_first else 'last':<9}"
                for query_words in (bound, 0):
                    own: list[bool] = []
                    foreign: list[bool] = []
                    for s in half:
                        o, f = long_prompt_figures(
                            s,
                            [x for x in half if x is not s],
                            root,
                            ids[s["sample_id"]],
                            words,
                            request_first,
                            query_words,
                        )
                        own += o
                        foreign += f
                    line += f"{statistics.fmean(own):>9.3f} /{statistics.fmean(foreign):>5.3f}"
                print(line)


# ---------------------------------------------------------------------------------------- latency


def longer(prompt: str, filler: list[str], words: int, rng: random.Random) -> str:
    """``prompt`` followed by other questions until it has ``words`` words."""
    parts = [prompt]
    while len(" ".join(parts).split()) < words:
        parts.append(rng.choice(filler))
    return " ".join(" ".join(parts).split()[:words])


async def latency(
    samples: list[dict[str, Any]],
    root: Path,
    ident: str,
    gate: dict[str, Any],
    per_bucket: int,
    samples_out: Path | None = None,
    query_words: int | None = None,
    idle_ms: float = 100.0,
    threads: bool = False,
    search_threads: int | None = None,
    old_control: bool = False,
    phases: bool = False,
    embed_threads: int | None = None,
    switch_ms: float | None = None,
    timeline: bool = False,
) -> None:
    """Each prompt is the first turn of a new session (briefing and recall both computed), asked ``idle_ms`` after
    the session is ready (a person types a prompt later than that; 0: a prompt given with the command). In the same
    run, for the same prompts: the first request's time with recall off (the control: also the first turn of a new
    session, ``idle_ms`` after it is ready), and memory_search. ``threads``: also each thread group's CPU over the
    span (recall on and off). ``search_threads``: the store's ``storage.search_threads`` (the process's first
    opening, the holder's, sets it). ``embed_threads``: the recall-on sessions' ``embeddings.threads``.
    ``switch_ms``: the interpreter's switch interval (how long a thread holding the GIL keeps it from one waiting).
    ``old_control``: also the control used until session 9 (one recall-off session for all prompts), in its own
    columns. ``phases``: where recall's worker spends its time (PhaseProbe). ``timeline``: when each step of the turn's
    path happened (TurnTimeline)."""
    rng = random.Random(7)
    pool = [str(q["question"]) for s in samples for q in questions(s)]
    rng.shuffle(pool)
    buckets: dict[str, list[str]] = {"<=15 words": [p for p in pool if len(p.split()) <= 15][:per_bucket]}
    for words in LENGTHS:
        buckets[f"{words} words"] = [longer(p, pool, words, rng) for p in pool[:per_bucket]]
    print(f"prompt asked {idle_ms:.0f} ms after the session is ready")
    print(
        f"{'prompt':<12}{'n':>5}{'added p50':>10}{'p95':>7}{'cpu+ p50':>9}{'p95':>7}{'wait p50':>10}{'p95':>7}"
        f"{'work p50':>10}{'p95':>7}{'brief p50':>10}{'p95':>7}{'embed p50':>10}{'p95':>7}{'off p50':>9}{'p95':>7}"
        f"{'search p50':>11}{'p95':>7}"
        + (
            f"{'added-old p50':>14}{'p95':>7}{'cpu+-old p50':>13}{'p95':>7}{'off-old p50':>12}{'p95':>7}"
            if old_control
            else ""
        )
    )
    # The store stays open in the process between the sessions (as it is during one session): a session's
    # first request then pays the briefing and the recall, not the store's opening.
    from amplifier_module_tool_agent_memory.config import RecallConfig, parse_config
    from amplifier_module_tool_agent_memory.identity import ResolvedIdentity
    from amplifier_module_tool_agent_memory.memory.recall import embedding_text
    from amplifier_module_tool_agent_memory.runtime import AgentMemory

    # The tree's own default (a --base run imports the other revision's package, so its own bound).
    recall_words = RecallConfig().query_words if query_words is None else query_words
    storage = {} if search_threads is None else {"storage": {"search_threads": search_threads}}
    holder = AgentMemory(
        parse_config({"storage_root": str(root), "embeddings": {"query_cache_size": 0}, **storage}),
        ResolvedIdentity(ident, "config"),
    )
    print(f"({holder.memory().coll.count()} memories in the store)")
    # A long timeout: under load the work is measured, not cut at recall.timeout_ms.
    on_config: dict[str, Any] = {"recall": {"gate": gate, "timeout_ms": 30_000}, "embeddings": {"query_cache_size": 0}}
    if query_words is not None:
        on_config["recall"]["query_words"] = query_words
    if embed_threads is not None:
        on_config["embeddings"]["threads"] = embed_threads
    if switch_ms is not None:
        sys.setswitchinterval(switch_ms / 1000)
    off_config: dict[str, Any] = {"recall": {"enabled": False}, "embeddings": {"query_cache_size": 0}}
    # Warm up first: the process's first session loads the embedding model (~0.5 s), a cold start, not a turn.
    warm = Session(root, ident, on_config)
    await warm.start()
    await warm.ask(pool[0])
    await warm.close()
    probe = PhaseProbe(holder) if phases else None
    steps = TurnTimeline(holder) if timeline else None
    raw: dict[str, dict[str, list[float]]] = {}
    by_thread: dict[str, dict[str, dict[str, list[float]]]] = {}
    for label, prompts in buckets.items():
        spent = by_thread[label] = {"on": {}, "off": {}}
        waits, works, briefs, searches, embeds, on_first, off_first = [], [], [], [], [], [], []
        on_cpu, off_cpu, reused_first, reused_cpu = [], [], [], []
        reused = None
        if old_control:
            reused = Session(root, ident, off_config, False)
            await reused.start()
        for prompt in prompts:
            # Recall on: each prompt is the first turn of a new session, so its first request gets the briefing
            # and the recall (the most a request waits).
            session = Session(root, ident, on_config, threads)
            await session.start()
            if steps is not None:
                steps.attach(session)
            await asyncio.sleep(idle_ms / 1000)
            _, event, _ = await session.ask(prompt)
            if probe is not None:
                probe.turn_done(session.marks["request"])
            if steps is not None:
                steps.turn_done(session.marks)
            on_first.append(session.first_request_ms())
            on_cpu.append(session.first_request_cpu_ms())
            if threads:
                for group, ms in session.first_request_threads_ms().items():
                    spent["on"].setdefault(group, []).append(ms)
            if event:
                waits.append(float(event.get("waited_ms", 0.0)))
                works.append(float(event.get("recall_ms", 0.0)))
                briefs.append(float(event.get("briefing_ms", 0.0)))
            search = session.session.coordinator.get("tools")["memory_search"]
            started = time.perf_counter()
            await search.execute({"query": prompt})
            searches.append((time.perf_counter() - started) * 1000)
            await session.close()
            # The floor: the local model's query embedding of what recall embeds of the prompt, alone.
            started = time.perf_counter()
            holder.embedder().embed_query(embedding_text(prompt, recall_words))
            embeds.append((time.perf_counter() - started) * 1000)
            # The control: recall off, the same prompt as the first turn of a new session asked as long after it is
            # ready, so the two differ only in recall.enabled (a new session's first turn pays first-use work of
            # its own, which is not recall's).
            off = Session(root, ident, off_config, threads)
            await off.start()
            await asyncio.sleep(idle_ms / 1000)
            await off.ask(prompt)
            off_first.append(off.first_request_ms())
            off_cpu.append(off.first_request_cpu_ms())
            if threads:
                for group, ms in off.first_request_threads_ms().items():
                    spent["off"].setdefault(group, []).append(ms)
            await off.close()
            if reused is not None:
                # The control before session 10: one recall-off session for every prompt, whose later turns are not
                # first turns (kept beside the new one by --old-control, to show what the change of method moves).
                await reused.ask(prompt)
                reused_first.append(reused.first_request_ms())
                reused_cpu.append(reused.first_request_cpu_ms())
        if reused is not None:
            await reused.close()
        added = minus_median(on_first, off_first)
        cpu_added = minus_median(on_cpu, off_cpu)
        figures = [p50_p95(v) for v in (added, cpu_added, waits, works, briefs, embeds, off_first, searches)]
        raw[label] = {
            "on_first": on_first,
            "off_first": off_first,
            "on_cpu": on_cpu,
            "off_cpu": off_cpu,
            "wait": waits,
            "work": works,
            "brief": briefs,
            "search": searches,
            "embed": embeds,
        }
        widths = (10, 9, 10, 10, 10, 10, 9, 11)
        line = f"{label:<12}{len(prompts):>5}" + "".join(
            f"{a:>{w}.1f}{b:>7.1f}" for w, (a, b) in zip(widths, figures, strict=True)
        )
        if reused is not None:
            raw[label].update(reused_first=reused_first, reused_cpu=reused_cpu)
            old = [
                p50_p95(v)
                for v in (minus_median(on_first, reused_first), minus_median(on_cpu, reused_cpu), reused_first)
            ]
            line += "".join(f"{a:>{w}.1f}{b:>7.1f}" for w, (a, b) in zip((12, 12, 12), old, strict=True))
        print(line)
        if probe is not None:
            probe.report(label)
        if steps is not None:
            steps.report(label)
    holder.close()
    if samples_out is not None:
        # Every sample, to pool runs made side by side with another tree.
        await asyncio.to_thread(samples_out.write_text, json.dumps(raw))
    print(
        "(ms. added: how much later the first request of a turn left provider:request than with recall off "
        "(from prompt:submit; minus the off median), the target's figure; cpu+: the process's CPU time over the same "
        "span minus the off median (all threads; robust to the load); wait: what recall's handler waited; "
        "work: the recall's own time in its worker; brief: the briefing's, in its worker (at session ready; "
        "0 when it was given on no request); "
        "embed: recall's query embedding of the prompt (recall.query_words of it) alone (the floor); "
        "off: prompt:submit to the first request with recall off, the first turn of a new session like recall "
        "on's (the control; the *-old columns: against one recall-off session for all prompts, the control until "
        "session 9); search: memory_search through the tool for the "
        "same prompt, same run)"
    )
    if threads:
        print_thread_cpu(by_thread)


def minus_median(values: list[float], control: list[float]) -> list[float]:
    """Each of ``values`` minus the median of ``control``, at least 0: what recall added to each prompt."""
    baseline = statistics.median(control)
    return [max(0.0, v - baseline) for v in values]


class PhaseProbe:
    """Where recall's worker spends its time: wraps, in this process only, ``compute`` and what
    ``Recaller.candidates`` calls, and sums each phase's wall and thread CPU ms per recall (only in the thread
    running ``compute``: memory_search and the briefing are not counted). A phase's wall minus its thread CPU is time
    the worker was not running: waiting for the GIL (the loop's Python, the engine holding it) or for a core.
    ``retrieve`` is part of ``read``; ``other`` is the recall's time outside the phases named."""

    TOP = (
        "content_words",
        "embed",
        "build_request",
        "query",
        "rerank",
        "current_first",
        "read",
        "coverage",
        "render_block",
    )

    def __init__(self, holder: Any) -> None:
        import threading

        from amplifier_module_tool_agent_memory.amplifier import recall_hooks
        from amplifier_module_tool_agent_memory.memory import recall

        self.local = threading.local()
        self.samples: list[dict[str, tuple[float, float]]] = []
        # The interpreter's collections (any thread: they hold the GIL) as (start, end) perf_counter pairs.
        self.collections: list[tuple[float, float, int]] = []
        # Collections overlapping a recall, by generation (0, 1, 2): which ones the recall pays for.
        self.generations = [0, 0, 0]
        self.gc_in: collections.Counter[str] = collections.Counter()
        self._gc_started = 0.0
        gc.callbacks.append(self._gc)
        recall_hooks.compute = self._root(recall_hooks.compute)
        for name in ("content_words", "build_request", "rerank", "current_first", "coverage", "render_block"):
            setattr(recall, name, self._timed(name, getattr(recall, name)))
        recall.Recaller._read = self._timed("read", recall.Recaller._read)  # type: ignore[method-assign]
        coll, embedder = type(holder.memory().coll), type(holder.embedder())
        # memory:recalled's emission (logging, the activity log's write, the session's hooks), by start and end:
        # the part before the first request leaves provider:request is on the request's path.
        self.emits: list[tuple[float, float]] = []
        emit = type(holder).emit

        async def timed_emit(runtime: Any, event: str, data: dict[str, Any]) -> None:
            started = time.perf_counter()
            try:
                await emit(runtime, event, data)
            finally:
                if event == "memory:recalled":
                    self.emits.append((started, time.perf_counter()))

        type(holder).emit = timed_emit
        self.on_path: list[float] = []
        coll.query = self._timed("query", coll.query)
        coll.retrieve = self._timed("retrieve", coll.retrieve)
        embedder.embed_query = self._timed("embed", embedder.embed_query)

    def _timed(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            sums = getattr(self.local, "sums", None)
            if sums is None:
                return fn(*args, **kwargs)
            wall, cpu = time.perf_counter(), time.thread_time()
            outer, self.local.phase = getattr(self.local, "phase", None), name
            try:
                return fn(*args, **kwargs)
            finally:
                self.local.phase = outer
                was = sums.get(name, (0.0, 0.0))
                sums[name] = (was[0] + (time.perf_counter() - wall) * 1000, was[1] + (time.thread_time() - cpu) * 1000)

        return timed

    def turn_done(self, request_at: float) -> None:
        """After a turn: how much of its first memory:recalled emission came before its first request left."""
        if self.emits:
            started, ended = self.emits[0]
            self.on_path.append(max(0.0, min(ended, request_at) - started) * 1000)
        self.emits.clear()

    def _gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
        else:
            ended = time.perf_counter()
            self.collections.append((self._gc_started, ended, int(info.get("generation", 0))))
            # Which phase of a recall a collection fell in (in the recall's own thread): that phase's CPU paid it.
            sums = getattr(self.local, "sums", None)
            if sums is not None:
                self.gc_in[getattr(self.local, "phase", None) or "other"] += 1

    def _root(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def root(*args: Any, **kwargs: Any) -> Any:
            self.local.sums = sums = {}
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.local.sums = None
                ended = time.perf_counter()
                total = ((ended - wall) * 1000, (time.thread_time() - cpu) * 1000)
                overlapping = [(a, b, g) for a, b, g in self.collections if b > wall and a < ended]
                collected = sum(min(b, ended) - max(a, wall) for a, b, _ in overlapping)
                for _, _, generation in overlapping:
                    self.generations[generation] += 1
                self.collections.clear()
                named = [sums[n] for n in self.TOP if n in sums]
                sums["other"] = (total[0] - sum(w for w, _ in named), total[1] - sum(c for _, c in named))
                sums["recall"] = total
                sums["gc (any thread)"] = (collected * 1000, 0.0)
                self.samples.append(sums)

        return root

    def report(self, label: str) -> None:
        """Each phase's wall and thread CPU ms per recall (p50 / p95) and its wait (wall - CPU, p50), then forget."""
        print(
            f"  phases of recall's worker, {label}, {len(self.samples)} recalls: wall p50/p95, thread CPU p50/p95, "
            "wait p50 (ms)"
        )
        for name in (*self.TOP, "retrieve", "other", "recall", "gc (any thread)"):
            pairs = [s[name] for s in self.samples if name in s]
            if not pairs:
                continue
            (w50, w95), (c50, c95) = p50_p95([w for w, _ in pairs]), p50_p95([c for _, c in pairs])
            wait50, _ = p50_p95([w - c for w, c in pairs])
            print(f"    {name:<15}{w50:>7.2f} /{w95:>6.2f}{c50:>9.2f} /{c95:>6.2f}{wait50:>9.2f}")
        print(
            f"    collections during the recalls, by generation 0 / 1 / 2: {' / '.join(map(str, self.generations))}; "
            f"in the recall's thread, by phase: {', '.join(f'{k} {v}' for k, v in self.gc_in.most_common()) or '-'}"
        )
        self.gc_in.clear()
        self.samples.clear()
        self.generations = [0, 0, 0]
        if self.on_path:
            (o50, o95), share = p50_p95(self.on_path), sum(1 for v in self.on_path if v > 0) / len(self.on_path)
            print(
                f"    memory:recalled before the request left: {o50:.2f} / {o95:.2f} ms (p50 / p95), "
                f"in {share:.0%} of turns"
            )
        self.on_path.clear()


class TurnTimeline:
    """When each step between prompt:submit and the first request leaving happened, per recall-on turn: the worker's
    start, the query embedding's and the recall's ends (wall and the worker's thread CPU), the orchestrator reaching
    provider:request (a handler just before recall's), recall's handler letting the request go (one just after it) and
    the request leaving (the last handler). Its two handlers are two more of amplifier-core's dispatch hops (~0.4 ms
    each), so the turns it times are a little slower than the others'. Since session 14 also: when the prompt's content
    words were ready (the handler's thread computes them beside the worker), the worker's shaping of the injection
    after the recall, and recall's request handler resuming after its wait (its first step on the loop's thread)."""

    def __init__(self, holder: Any) -> None:
        import threading

        from amplifier_module_tool_agent_memory.amplifier import recall_hooks

        self.priority = recall_hooks.PRIORITY
        self.at: dict[str, float] = {}
        self.rows: dict[str, list[float]] = collections.defaultdict(list)
        self.shares: dict[str, list[bool]] = collections.defaultdict(list)
        local = threading.local()
        compute, embedder = recall_hooks.compute, type(holder.embedder())
        embed_query = embedder.embed_query

        def timed_compute(*args: Any) -> Any:
            local.worker = True
            self.at.update(worker=time.perf_counter(), worker_cpu=time.thread_time())
            try:
                return compute(*args)
            finally:
                local.worker = False
                self.at.update(done=time.perf_counter(), done_cpu=time.thread_time())

        def timed_embed(inner: Any, text: str) -> Any:
            try:
                return embed_query(inner, text)
            finally:
                if getattr(local, "worker", False):
                    self.at.update(embedded=time.perf_counter(), embedded_cpu=time.thread_time())

        recall_hooks.compute = timed_compute
        embedder.embed_query = timed_embed
        self._mark_session_14(recall_hooks, threading.main_thread())

    def _mark_session_14(self, recall_hooks: Any, loop_thread: Any) -> None:
        """The marks of the parts session 14 moved (a tree without them just lacks their rows)."""
        import threading

        from amplifier_module_tool_agent_memory.memory import recall as recall_module

        words_type = getattr(recall_module, "PromptWords", None)
        if words_type is not None:
            fill = words_type.fill

            def timed_fill(words: Any) -> None:
                new = words.known() is None
                fill(words)
                if new:
                    self.at.setdefault("words", time.perf_counter())

            words_type.fill = timed_fill
        shape, size_limit = getattr(recall_hooks, "shape", None), recall_hooks._size_limit
        if shape is not None:

            def timed_shape(*args: Any) -> Any:
                try:
                    return shape(*args)
                finally:
                    on_loop = threading.current_thread() is loop_thread
                    self.at["reshaped" if on_loop else "shaped"] = time.perf_counter()

            recall_hooks.shape = timed_shape

        def timed_size_limit(coordinator: Any) -> Any:
            if threading.current_thread() is loop_thread:
                self.at.setdefault("resumed", time.perf_counter())  # the request's handler, after its wait
            return size_limit(coordinator)

        recall_hooks._size_limit = timed_size_limit
        clock = recall_hooks.time
        at = self.at

        class Clock:
            """recall_hooks' ``time``: its last perf_counter() on the loop after the wait is the handler's last step
            (the ``waited_ms`` it reports) before it returns its HookResult."""

            def __getattr__(self, name: str) -> Any:
                return getattr(clock, name)

            @staticmethod
            def perf_counter() -> float:
                now = clock.perf_counter()
                if "resumed" in at and threading.current_thread() is loop_thread:
                    at.setdefault("tail", now)
                return now

        recall_hooks.time = Clock()

    def attach(self, session: Session) -> None:
        """Recall-on session: mark the request reaching recall's handler and leaving it."""
        from amplifier_core import HookResult

        def mark(name: str) -> Callable[[str, dict[str, Any]], Any]:
            async def handler(event: str, data: dict[str, Any]) -> Any:
                self.at.setdefault(name, time.perf_counter())
                return HookResult(action="continue")

            return handler

        hooks = session.session.coordinator.hooks
        hooks.register("provider:request", mark("reached"), priority=self.priority - 1, name="bench-reached")
        hooks.register("provider:request", mark("handled"), priority=self.priority + 1, name="bench-handled")
        self.at.clear()

    def turn_done(self, marks: dict[str, float]) -> None:
        at, prompt = self.at, marks["prompt"]
        if not {"worker", "embedded", "done", "reached", "handled"} <= at.keys():
            return  # no recall ran (an empty prompt) or no request
        row = {
            "worker starts": at["worker"] - prompt,
            "embedding (wall)": at["embedded"] - at["worker"],
            "embedding (CPU)": at["embedded_cpu"] - at["worker_cpu"],
            "after it (wall)": at["done"] - at["embedded"],
            "after it (CPU)": at["done_cpu"] - at["embedded_cpu"],
            "request reached": at["reached"] - prompt,
            "handler's end": at["handled"] - max(at["done"], at["reached"]),
            "to the last": marks["request"] - at["handled"],
            "request leaves": marks["request"] - prompt,
        }
        if "words" in at:  # by the handler's thread before the worker's embedding ended (else the worker's own)
            row["words ready"] = at["words"] - prompt
        ready = at.get("shaped", at["done"])
        if "shaped" in at:
            row["shaping (wall)"] = at["shaped"] - at["done"]
        if "resumed" in at:
            row["loop resumes"] = at["resumed"] - max(ready, at["reached"])
            row["resumed to next"] = at["handled"] - at["resumed"]
            if "tail" in at:
                row["its own steps"] = at["tail"] - at["resumed"]
                row["its return to next"] = at["handled"] - at["tail"]
        self.shares["the request shaped its own injection"].append("reshaped" in at)
        if "words" in at:
            self.shares["the words were ready before the embedding ended"].append(at["words"] < at["embedded"])
        for name, seconds in row.items():
            self.rows[name].append(seconds * 1000)
        self.at.clear()

    def report(self, label: str) -> None:
        import contextlib
        import os

        print(
            f"  the turn's path, {label}, {len(self.rows['request leaves'])} turns (ms from prompt:submit or "
            "durations; p50 / p95): the worker's embedding includes its content words when the handler's thread had "
            "not computed them; the handler's end is from the later of the recall's end and the request reaching it "
            "to the next handler (wake-up, its own steps, one dispatch hop)"
        )
        for name, values in self.rows.items():
            p50, p95 = p50_p95(values)
            print(f"    {name:<18}{p50:>7.2f} /{p95:>6.2f}")
        for name, flags in self.shares.items():
            print(f"    {name}: {sum(flags) / len(flags):.0%} of turns")
        self.rows.clear()
        self.shares.clear()
        with contextlib.suppress(OSError):  # constant from bucket to bucket: no thread is started per session
            print(f"    threads in the process now: {len(os.listdir('/proc/self/task'))}")


def print_thread_cpu(by_thread: dict[str, dict[str, dict[str, list[float]]]]) -> None:
    """Each thread group's CPU ms over prompt:submit -> first request, mean with recall on / off, per bucket."""
    groups = sorted({g for spent in by_thread.values() for side in spent.values() for g in side})
    print(
        "\nCPU ms by thread group over the same span, mean with recall on / off (the span's /proc reads, ~0.5 ms, "
        "count in loop):"
    )
    print(f"{'prompt':<12}" + "".join(f"{g:>20}" for g in groups))
    for label, spent in by_thread.items():
        means = [
            (statistics.fmean(spent["on"].get(g) or [0.0]), statistics.fmean(spent["off"].get(g) or [0.0]))
            for g in groups
        ]
        cells = [f"{on:>12.2f} /{off:>6.2f}" for on, off in means]
        print(f"{label:<12}" + "".join(cells))


async def fill_store(samples: list[dict[str, Any]], root: Path, ident: str, count: int) -> None:
    """``count`` memories under ``ident`` (the dev turns over and over, a few preferences and decisions among
    them), written with memory_import's batch path."""
    from amplifier_module_tool_agent_memory.config import parse_config
    from amplifier_module_tool_agent_memory.identity import ResolvedIdentity
    from amplifier_module_tool_agent_memory.memory.models import MemoryRecord
    from amplifier_module_tool_agent_memory.runtime import AgentMemory

    if (root / ident).exists():
        return
    turns = [turn_content(t) for s in samples for session in sessions(s["conversation"]) for t in session]
    runtime = AgentMemory(parse_config({"storage_root": str(root)}), ResolvedIdentity(ident, "config"))
    records = []
    for i in range(count):
        kind = "preference" if i % 50 == 0 else "decision" if i % 50 == 1 else "note"
        text = turns[i % len(turns)] + (f" (round {i // len(turns) + 1})" if i >= len(turns) else "")
        records.append(
            MemoryRecord(
                id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"{ident}/{i}")),
                content=text,
                kind=kind,
                created_at=f"2026-0{1 + i % 9}-1{i % 10}T12:00:00Z",
            )
        )
    started = time.perf_counter()
    runtime.memory().import_records(records)
    print(f"  filled {count} memories in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    runtime.close()


# ------------------------------------------------------------------------------------------- against a base


def no_spinning() -> None:
    """Every onnxruntime session built from now on in this process lets its intra-op pool threads sleep between
    runs (a measurement only: fastembed exposes no such option)."""
    import onnxruntime as ort

    class NoSpinning(ort.SessionOptions):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.add_session_config_entry("session.intra_op.allow_spinning", "0")

    ort.SessionOptions = NoSpinning


def child_env(setting: str) -> dict[str, str]:
    """This process's environment with ``NAME=VALUE`` set, or ``NAME`` removed when VALUE is ``-``: a setting the
    host reads at start (e.g. TOKIO_WORKER_THREADS, amplifier-core's runtime threads), measured side by side."""
    import os

    name, _, value = setting.partition("=")
    env = {k: v for k, v in os.environ.items() if k != name}
    if value != "-":
        env[name] = value
    return env


def side_by_side(args: argparse.Namespace) -> int:
    """The filled store's latency of this tree and of ``args.base`` (its own package, this script), or of this tree
    with each of two ``storage.search_threads`` (``args.vs_search_threads``), in one run: each round runs both, in
    alternating order, in fresh processes; their samples are pooled per side and each run's added and cpu+ are taken
    against its own recall-off median. Absolute times on a shared machine move with the load; the two columns of one
    run do not drift apart. (A base tree that predates the setting opens the shards with whatever pool size the last
    open persisted: compare pool sizes with --vs-search-threads, not --base.)"""
    workdir = Path(args.store_dir) if args.store_dir else Path(tempfile.mkdtemp(prefix="recall-bench-"))
    trees: dict[str, tuple[dict[str, str] | None, list[str]]]
    if args.vs_search_threads:
        trees = {f"threads={n}": (None, ["--search-threads", n]) for n in args.vs_search_threads.split(",")}
    elif args.vs_switch_ms:
        trees = {f"switch={n}ms": (None, ["--switch-ms", n]) for n in args.vs_switch_ms.split(",")}
    elif args.vs_embed_threads:
        trees = {f"embed={n}": (None, ["--embed-threads", n]) for n in args.vs_embed_threads.split(",")}
    elif args.vs_env:
        trees = {f"{n}": (child_env(n), []) for n in args.vs_env.split(",")}
    else:
        from speed import base_env, extract_base

        base = extract_base(args.base, workdir / f"base-src-{args.base}")
        trees = {"this tree": (None, []), args.base: (base_env(base), [])}
        if args.base_first:  # a second run of --rounds 1 in the other order (one side takes ~3.5 min at 60 a bucket)
            trees = dict(reversed(list(trees.items())))
    pooled: dict[str, dict[str, dict[str, list[float]]]] = {name: {} for name in trees}
    names = list(trees)
    for round_no in range(args.rounds):
        order = list(trees.items()) if round_no % 2 == 0 else list(reversed(trees.items()))
        for side, (name, (env, extra)) in enumerate(order):
            out = workdir / f"side-{round_no}-{side}.json"
            cmd = [
                sys.executable,
                str(Path(__file__).resolve()),
                "--latency-only",
                "--fill-only",
                "--store-dir",
                str(workdir),
                "--per-bucket",
                str(args.per_bucket),
                "--idle-ms",
                str(args.idle_ms),
                "--samples-json",
                str(out),
                *extra,
                *(["--no-embed-spin"] if args.no_embed_spin else []),
            ]
            print(f"round {round_no + 1}/{args.rounds}: {name}", file=sys.stderr)
            subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
            for bucket, cols in json.loads(out.read_text()).items():
                into = pooled[name].setdefault(bucket, {})
                for col, values in cols.items():
                    into.setdefault(col, []).extend(values)
                for col, on, off in (("added", "on_first", "off_first"), ("cpu+", "on_cpu", "off_cpu")):
                    into.setdefault(col, []).extend(minus_median(cols[on], cols[off]))
    print(
        f"\nLatency at {args.latency_fill} memories, {' against '.join(names)} in one run: {args.rounds} rounds "
        f"x {args.per_bucket} prompts a bucket, sides alternating; ms p50 / p95"
    )
    columns = ("added", "cpu+", "work", "wait", "search", "embed")
    print(f"{'prompt':<12}" + "".join(f"{f'{col} {name}':>22}" for col in columns for name in names))
    for bucket in pooled[names[0]]:
        cells = []
        for col in columns:
            for name in names:
                p50, p95 = p50_p95(pooled[name][bucket][col])
                cells.append(f"{p50:>15.1f} /{p95:>5.1f}")
        print(f"{bucket:<12}" + "".join(cells))
    print(
        "(added: the target's figure; cpu+: the process's CPU over the same span, all threads; work: the recall's "
        "own time in its worker; wait: what the request's handler waited; search: memory_search for the same "
        "prompt; embed: recall's query embedding (of recall.query_words of the prompt) alone)"
    )
    return 0


# ------------------------------------------------------------------------------------------- main


async def main_async(args: argparse.Namespace) -> int:
    if not DATA.exists():
        print(f"SKIP: LoCoMo data not found at {DATA} (it lives in ../shared/data, outside the repository)")
        return 0
    if importlib.util.find_spec("amplifier_module_loop_basic") is None:
        print("SKIP: loop-basic is not installed (make install with ../shared/vendor beside the repository)")
        return 0
    sys.path.insert(0, str(STACK))
    samples = {s["sample_id"]: s for s in json.loads(DATA.read_text())}
    halves = {"tune": [samples[i] for i in TUNE], "held": [samples[i] for i in HELD]}
    workdir = Path(args.store_dir) if args.store_dir else Path(tempfile.mkdtemp(prefix="recall-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    ids = {}
    started = time.perf_counter()
    for half in halves.values():
        for sample in half:
            ids[sample["sample_id"]] = await store_conversation(sample, workdir)
    print(f"stored {sum(len(v) for v in ids.values())} turns ({time.perf_counter() - started:.0f} s)", file=sys.stderr)

    from amplifier_module_tool_agent_memory.config import RecallGateConfig

    gate = RecallGateConfig().model_dump()
    if args.dump_signals:
        return dump_signals(halves, workdir, ids, Path(args.dump_signals))
    if args.tune:
        rows_by_half: dict[str, list[dict[str, Any]]] = {}
        for name, half in halves.items():
            rows_by_half[name] = [
                row
                for s in half
                for row in measure_signals(s, [o for o in half if o is not s], workdir, ids[s["sample_id"]])
            ]
        from amplifier_module_tool_agent_memory.config import RecallConfig

        weight, bar = tune(rows_by_half, RecallConfig().budget_tokens, args.floor)
        gate.update(cosine_weight=weight, min_relevance=bar)
    print(f"gate: {gate}")

    if not args.latency_only:
        print("\nThrough loop-basic (one turn per question; the recorded request's injected text):")
        print(
            f"{'half':<6}{'own q':>6}{'evidence':>10}{'injected':>10}{'tok p50':>9}{'tok p95':>9}{'tok max':>8}"
            f"{'foreign':>9}{'nothing':>10}   why nothing (own)"
        )
        for name, half in halves.items():
            results = [
                await end_to_end(s, [o for o in half if o is not s], workdir, ids[s["sample_id"]], gate) for s in half
            ]
            report(name, results)

    if args.long_prompts:
        long_prompts(halves, workdir, ids)

    if args.latency or args.latency_only:
        all_samples = [s for half in halves.values() for s in half]
        if not args.fill_only:
            print(f"\nLatency at {len(ids[TUNE[0]])} memories ({TUNE[0]}), query cache off:")
            await latency(all_samples, workdir, identity(samples[TUNE[0]]), gate, args.per_bucket)
        if args.latency_fill:
            ident = f"recall-fill-{args.latency_fill}"
            await fill_store(all_samples, workdir, ident, args.latency_fill)
            print(f"\nLatency at {args.latency_fill} memories, query cache off:")
            out = Path(args.samples_json) if args.samples_json else None
            await latency(
                all_samples,
                workdir,
                ident,
                gate,
                args.per_bucket,
                out,
                args.query_words,
                args.idle_ms,
                args.threads,
                args.search_threads,
                args.old_control,
                args.phases,
                args.embed_threads,
                args.switch_ms,
                args.timeline,
            )
    print(
        f"\ntotal {time.perf_counter() - started:.0f} s; timings on a shared 2-core machine are noisy: "
        "compare the on/off columns of one run"
    )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store-dir", help="keep the stores here and reuse them on the next run")
    parser.add_argument(
        "--dump-signals",
        metavar="FILE",
        help="write every TUNE and HELD prompt's block and candidates' signals (JSON), then stop",
    )
    parser.add_argument("--tune", action="store_true", help="tune the gate's bars on TUNE first, then report both")
    parser.add_argument("--floor", type=float, default=0.75, help="foreign-nothing share the tuning must keep on TUNE")
    parser.add_argument("--latency", action="store_true", help="measure the latency the hook adds")
    parser.add_argument("--latency-only", action="store_true", help="only the latency (no evidence figures)")
    parser.add_argument("--latency-fill", type=int, default=10_000, help="memories of the latency store (0: none)")
    parser.add_argument(
        "--long-prompts",
        action="store_true",
        help="evidence / foreign nothing of 30- and 60-word prompts, query embedding bounded vs whole",
    )
    parser.add_argument("--query-words", type=int, help="recall.query_words of the latency sessions (0: whole prompt)")
    parser.add_argument("--fill-only", action="store_true", help="latency on the filled store only")
    parser.add_argument("--samples-json", help="write the filled store's latency samples here (JSON)")
    parser.add_argument("--per-bucket", type=int, default=60, help="prompts per length bucket")
    parser.add_argument(
        "--idle-ms",
        type=float,
        default=100.0,
        help="latency: ms between a session being ready and its first prompt (0: a prompt given with the command)",
    )
    parser.add_argument(
        "--threads",
        action="store_true",
        help="latency: also each thread group's CPU over the span (Linux; adds the /proc reads to it)",
    )
    parser.add_argument(
        "--old-control",
        action="store_true",
        help="latency: also the control used until session 9 (one recall-off session for all prompts, "
        "its later turns not first turns), in columns of its own",
    )
    parser.add_argument(
        "--timeline",
        action="store_true",
        help="latency: when each step of a recall-on turn's path happened (the worker, the embedding, "
        "the request reaching and leaving recall's handler)",
    )
    parser.add_argument(
        "--phases",
        action="store_true",
        help="latency: where recall's worker spends its time, by phase (wall and thread CPU)",
    )
    parser.add_argument(
        "--base",
        help="latency: a git revision measured in the same run, alternating with this tree "
        "(the filled store only; its package, this script)",
    )
    parser.add_argument("--base-first", action="store_true", help="with --base: the base's side runs first")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each side with --base / --vs-search-threads")
    parser.add_argument(
        "--search-threads", type=int, help="latency: storage.search_threads of the store (0: Edge's own)"
    )
    parser.add_argument(
        "--vs-search-threads",
        help="latency: storage.search_threads values, e.g. 1,0, side by side in one run (filled store)",
    )
    parser.add_argument(
        "--embed-threads",
        type=int,
        help="latency: embeddings.threads (intra-op threads of the model) of the recall-on sessions",
    )
    parser.add_argument(
        "--vs-embed-threads",
        help="latency: embeddings.threads values of the recall-on sessions, e.g. 1,2, side by side in "
        "one run (filled store)",
    )
    parser.add_argument(
        "--no-embed-spin",
        action="store_true",
        help="latency: onnxruntime's intra-op pool threads sleep between runs instead of spinning "
        "(session.intra_op.allow_spinning=0; only matters with --embed-threads above 1)",
    )
    parser.add_argument(
        "--switch-ms",
        type=float,
        help="latency: the interpreter's switch interval in ms (sys.setswitchinterval; Python's is 5)",
    )
    parser.add_argument("--vs-switch-ms", help="latency: switch intervals in ms, e.g. 5,1, side by side in one run")
    parser.add_argument(
        "--vs-env",
        help="latency: environments of the whole process side by side in one run, e.g. "
        "TOKIO_WORKER_THREADS=-,TOKIO_WORKER_THREADS=1 (-: unset)",
    )
    args = parser.parse_args()
    if args.no_embed_spin:
        no_spinning()
    sides = (args.vs_search_threads, args.vs_embed_threads, args.vs_switch_ms, args.vs_env)
    if args.base or any(sides):
        if not DATA.exists():
            print(f"SKIP: LoCoMo data not found at {DATA} (it lives in ../shared/data, outside the repository)")
            return 0
        return side_by_side(args)
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
