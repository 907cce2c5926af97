"""What recall's keyword (BM25) stages should search for: evidence / foreign nothing per text, short and long prompts.

Run ``python benchmarks/recall_keyword_text.py --store-dir DIR`` with DIR a ``benchmarks/recall.py --store-dir`` folder
(its LoCoMo conversations are stored there on a first run of that script). For each text, each own and renamed foreign
question of LoCoMo dev is recalled once (``Recaller.candidates``, as ``benchmarks/query_embed_text.py`` does) with the
keyword stages searching that text, and the gate as configured decides what is injected into a block of
``recall.budget_tokens``: evidence injected / foreign nothing on TUNE and, held apart, on HELD. With ``--long`` also
the 60-word prompts of ``benchmarks/recall.py --long-prompts`` (the question first, then last). Choose on TUNE; HELD is
the check. Nothing is asserted; the latency is measured by ``benchmarks/recall.py --latency-only``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import recall as bench


def plain_words(prompt: str, words: int) -> str:
    """The prompt's first ``words`` distinct words other than function words (framing words and names kept)."""
    from amplifier_module_tool_agent_memory.compare.lexicon import FUNCTION_WORDS
    from amplifier_module_tool_agent_memory.memory.recall import _POSSESSIVE, _WORD

    seen: set[str] = set()
    kept: list[str] = []
    for match in _WORD.finditer(prompt):
        bare = _POSSESSIVE.sub("", match.group())
        lower = bare.lower()
        if len(lower) < 2 or lower in FUNCTION_WORDS or lower in seen:
            continue
        seen.add(lower)
        kept.append(bare)
        if len(kept) == words:
            break
    return " ".join(kept) if kept else prompt


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store-dir", required=True, help="benchmarks/recall.py's --store-dir (conversations stored)")
    parser.add_argument(
        "--texts",
        default="whole,topic:0,topic:16,topic:12,topic:8",
        help="whole (the prompt as written), topic:N (first N distinct topic words; 0: all of them) or plain:N "
        "(first N distinct words other than function words)",
    )
    parser.add_argument("--long", action="store_true", help="also 60-word prompts, the question first and last")
    args = parser.parse_args()
    root = Path(args.store_dir)
    if not bench.DATA.exists():
        print(f"SKIP: LoCoMo data not found at {bench.DATA} (it lives in ../shared/data, outside the repository)")
        return 0
    if not all((root / f"{c}.ids.json").exists() for c in bench.TUNE + bench.HELD):
        print(f"SKIP: no stored conversations in {root}: run benchmarks/recall.py --store-dir {root} first")
        return 0
    from amplifier_module_tool_agent_memory.config import RecallConfig
    from amplifier_module_tool_agent_memory.memory import recall

    samples = {s["sample_id"]: s for s in json.loads(bench.DATA.read_text())}
    halves = {"tune": [samples[c] for c in bench.TUNE], "held": [samples[c] for c in bench.HELD]}
    ids = {c: json.loads((root / f"{c}.ids.json").read_text()) for c in bench.TUNE + bench.HELD}
    config = RecallConfig()
    gate = config.gate
    words_kept = recall.KEYWORD_WORDS
    keyword_text = recall.keyword_text
    print(
        f"gate: coverage + {gate.cosine_weight} cosine >= {gate.min_relevance}; blocks of {config.budget_tokens} "
        f"tokens; evidence injected / foreign nothing; this tree's recall.KEYWORD_WORDS = {words_kept}"
    )
    head = f"{'keyword stages search':<24}{'TUNE':>16}{'HELD':>16}"
    if args.long:
        head += f"{'TUNE 60 first':>16}{'TUNE 60 last':>16}{'HELD 60 first':>16}{'HELD 60 last':>16}"
    print(head)
    for spec in args.texts.split(","):
        kind, _, count = spec.partition(":")
        # Recaller.candidates reads the module's keyword_text and KEYWORD_WORDS: each text is swapped in for its pass.
        recall.keyword_text = {"whole": lambda prompt, _words: prompt, "plain": plain_words}.get(  # type: ignore[assignment]
            kind, keyword_text
        )
        recall.KEYWORD_WORDS = int(count or 0)
        line = f"{spec:<24}"
        for half in halves.values():
            rows = [
                row
                for s in half
                for row in bench.measure_signals(s, [o for o in half if o is not s], root, ids[s["sample_id"]])
            ]
            evidence, quiet = bench.gate_figures(
                rows, lambda cov, cos: cov + gate.cosine_weight * cos >= gate.min_relevance, config.budget_tokens
            )
            line += f"{evidence:>9.3f} /{quiet:>5.3f}"
        if args.long:
            for half in halves.values():
                for first in (True, False):
                    own: list[bool] = []
                    foreign: list[bool] = []
                    for s in half:
                        o, f = bench.long_prompt_figures(
                            s, [x for x in half if x is not s], root, ids[s["sample_id"]], 60, first, config.query_words
                        )
                        own += o
                        foreign += f
                    line += f"{statistics.fmean(own):>9.3f} /{statistics.fmean(foreign):>5.3f}"
        print(line, flush=True)
    recall.keyword_text = keyword_text
    recall.KEYWORD_WORDS = words_kept
    return 0


if __name__ == "__main__":
    sys.exit(main())
