"""What recall's keyword (BM25) stages should search of a prompt: evidence / foreign nothing per text.

Run ``python benchmarks/recall_keyword_text.py --store-dir DIR`` with DIR a ``benchmarks/recall.py --store-dir`` folder
(its LoCoMo conversations are stored there on a first run of that script). For each text, each own and renamed foreign
question of LoCoMo dev is recalled once (``Recaller.candidates``, as ``benchmarks/query_embed_text.py`` does) with the
two keyword stages of its fused query searching that text (``memory/recall.py`` ``keyword_text`` swapped; the
embedding and the gate as configured), and the gate decides what is injected into a block of ``recall.budget_tokens``:
evidence injected / foreign nothing on TUNE and, held apart, on HELD. With ``--long`` also the 60-word prompts of
``benchmarks/recall.py --long-prompts`` (the question first, then last). Choose on TUNE; HELD is the check. Nothing is
asserted. ``benchmarks/recall_engine.py --keyword-words`` measures the same texts' engine work. Session 15 chose
``first:16`` with them (docs/recall.md).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import recall as bench

Text = Callable[[str], str]


def distinct_words(prompt: str, words: int, framing: bool) -> str:
    """The prompt's first ``words`` distinct words (0: all of them) other than function words, names kept; without
    the framing words too unless ``framing`` (the topic words of ``memory/recall.py``), possessives stripped."""
    from amplifier_module_tool_agent_memory.compare.lexicon import FUNCTION_WORDS
    from amplifier_module_tool_agent_memory.memory.recall import _NOT_TOPICAL, _POSSESSIVE, _WORD

    dropped = FUNCTION_WORDS if framing else _NOT_TOPICAL
    seen: set[str] = set()
    kept: list[str] = []
    for match in _WORD.finditer(prompt):
        bare = _POSSESSIVE.sub("", match.group())
        lower = bare.lower()
        if len(lower) < 2 or lower in dropped or lower in seen:
            continue
        seen.add(lower)
        kept.append(bare)
        if len(kept) == words:
            break
    return " ".join(kept) if kept else prompt


def text_of(spec: str) -> Text:
    """``whole`` (the prompt as written, what recall searched until session 15), ``first:N`` (its first N words as
    written; recall searches ``first:16``), ``topic:N``
    (its first N distinct topic words; 0: all) or ``plain:N`` (its first N distinct words other than function words,
    framing words kept)."""
    kind, _, count = spec.partition(":")
    if kind == "whole":
        return lambda prompt: prompt
    if kind == "first":
        return lambda prompt: " ".join(prompt.split()[: int(count)])
    return lambda prompt: distinct_words(prompt, int(count or 0), framing=kind == "plain")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store-dir", required=True, help="benchmarks/recall.py's --store-dir (conversations stored)")
    parser.add_argument(
        "--texts",
        default="whole,topic:0,topic:16,topic:12,topic:8,plain:0,plain:8",
        help="comma-separated: whole, first:N, topic:N or plain:N (see text_of)",
    )
    parser.add_argument("--long", action="store_true", help="also 60-word prompts, the question first and last")
    args = parser.parse_args()
    root = Path(args.store_dir)
    if (stored := bench.stored_halves(root)) is None:
        return 0
    halves, ids = stored
    from amplifier_module_tool_agent_memory.config import RecallConfig
    from amplifier_module_tool_agent_memory.memory import recall

    query_words = RecallConfig().query_words
    own_text = recall.keyword_text
    print(bench.gate_line())
    head = f"{'keyword stages search':<24}{'TUNE':>16}{'HELD':>16}"
    if args.long:
        head += f"{'TUNE 60 first':>16}{'TUNE 60 last':>16}{'HELD 60 first':>16}{'HELD 60 last':>16}"
    print(head)
    for spec in args.texts.split(","):
        # Recaller.candidates reads the module's keyword_text: each text is swapped in for its own pass.
        recall.keyword_text = text_of(spec)
        line = f"{spec:<24}"
        line += bench.halves_cells(halves, root, ids)
        if args.long:
            for half in halves.values():
                for first in (True, False):
                    own: list[bool] = []
                    foreign: list[bool] = []
                    for s in half:
                        o, f = bench.long_prompt_figures(
                            s, [x for x in half if x is not s], root, ids[s["sample_id"]], 60, first, query_words
                        )
                        own += o
                        foreign += f
                    line += f"{statistics.fmean(own):>9.3f} /{statistics.fmean(foreign):>5.3f}"
        print(line, flush=True)
    recall.keyword_text = own_text
    return 0


if __name__ == "__main__":
    sys.exit(main())
