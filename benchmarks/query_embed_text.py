"""What recall's query embedding should read of a prompt: evidence / foreign nothing and tokens, per text.

Run ``python benchmarks/query_embed_text.py --store-dir DIR`` with DIR a ``benchmarks/recall.py --store-dir`` folder
(its LoCoMo conversations are stored there on a first run of that script). For each way of cutting the prompt, each
own and renamed foreign question of LoCoMo dev is recalled once (``Recaller.candidates``, as ``recall.py --tune``
does) with the query embedding reading that text, and the gate as configured (not retuned) decides what is injected
into a block of ``recall.budget_tokens``: evidence injected / foreign nothing on TUNE and, held apart, on HELD, and the
tokens the model reads (with its two markers) p50 / max. Choose on TUNE; HELD is the check. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import recall as bench

Cut = Callable[[str, int], str]


def first_words(prompt: str, words: int) -> str:
    """The prompt's first ``words`` words as written (recall's query text until session 11)."""
    return " ".join(prompt.split()[:words])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store-dir", required=True, help="benchmarks/recall.py's --store-dir (conversations stored)")
    parser.add_argument("--cuts", default="first:16,first:10,first:8,topic:0,topic:8,topic:6,topic:5,topic:4",
                        help="first:N (first N words as written) or topic:N (first N topic words; 0: all of them)")
    args = parser.parse_args()
    root = Path(args.store_dir)
    if (stored := bench.stored_halves(root)) is None:
        return 0
    halves, ids = stored
    from amplifier_module_tool_agent_memory.config import EmbeddingConfig
    from amplifier_module_tool_agent_memory.embeddings.providers import LocalEmbedder
    from amplifier_module_tool_agent_memory.memory import recall

    tokenizer = LocalEmbedder(EmbeddingConfig())._session().model.tokenizer
    prompts = [str(q["question"]) for half in halves.values() for s in half for q in bench.questions(s)]
    topic = recall.embedding_text
    print(bench.gate_line())
    print(f"{'query embedding of':<24}{'tokens p50':>11}{'max':>5}{'TUNE':>16}{'HELD':>16}")
    for spec in args.cuts.split(","):
        kind, count = spec.split(":")
        words = int(count)
        cut: Cut = first_words if kind == "first" else topic
        words = words or 10_000  # topic:0 is every topic word (recall.query_words 0 means the prompt as written)
        # Recaller.candidates reads the module's embedding_text: each cut is swapped in for its own pass.
        recall.embedding_text = lambda prompt, _bound, cut=cut, words=words: cut(prompt, words)  # type: ignore[misc]
        line = f"{spec:<24}"
        tokens = [len(tokenizer.encode(cut(p, words)).ids) for p in prompts]
        line += f"{statistics.median(tokens):>11.0f}{max(tokens):>5}"
        line += bench.halves_cells(halves, root, ids)
        print(line, flush=True)
    recall.embedding_text = topic
    return 0


if __name__ == "__main__":
    sys.exit(main())
