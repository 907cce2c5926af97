"""Redaction benchmark: what it costs on every write, and how often it fires on text holding no secret.

Redaction runs on every stored field of every tool (and on logs), so its cost per typical
1 KB text matters, and so do false positives (a redacted word is lost for good).

- Cost: ``redact`` on 1 KB chunks of dev prose (LoCoMo dialogue turns), plan-cache JSON
  (prompts and actions), held-apart English documentation (Python's own ``pydoc_data``
  topics, shipped with every Python), held-apart code (the standard library's source), and
  1 KB of prose with one secret of each common kind spliced in. Median and p95 microseconds.
- False positives: the share of dev texts (LoCoMo turns, plan-cache prompts and actions,
  updates cases) and held-apart paragraphs (pydoc topics; the installed packages' READMEs,
  which discuss API keys and tokens a lot) that any rule fires on, with the rules and the
  first examples to read (a README's example credential is a true positive). Source code is
  reported too: it holds real example credentials (test keys, docstring samples), so its hits
  are listed, not counted as errors.
- Recall: per format rule, secrets generated at random from the format's published shape
  (prefix, alphabet, length), written into sentences; the share redacted.

Run: ``python benchmarks/redaction.py`` (a few seconds). Dev data is read from ../shared/data
and skipped when missing; the held-apart corpora come with Python.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

from _common import DATA_DIR, p50_p95, print_table

from amplifier_module_tool_agent_memory.redaction import redact

CHUNK = 1024
STDLIB = Path(json.__file__).resolve().parent.parent


def chunks(text: str, size: int = CHUNK, limit: int = 300) -> list[str]:
    return [text[i : i + size] for i in range(0, max(len(text) - size, 0), size)][:limit]


def locomo_turns() -> list[str]:
    path = DATA_DIR / "locomo" / "locomo-dev.json"
    if not path.exists():
        return []
    samples = json.loads(path.read_text())
    return [
        turn["text"]
        for sample in samples
        for key, session in sample["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
        for turn in session
    ]


def plan_texts() -> list[str]:
    out: list[str] = []
    for name in ("dev.jsonl", "dev-multidomain.jsonl"):
        path = DATA_DIR / "plan-cache" / name
        if path.exists():
            for line in path.read_text().splitlines():
                case = json.loads(line)
                out += [case["stored"], *case.get("positives", []), *case.get("negatives", [])]
                out.append(json.dumps(case["actions"]))
    return out


def update_texts() -> list[str]:
    path = DATA_DIR / "updates" / "dev.jsonl"
    if not path.exists():
        return []
    keys = ("old", "new", "query", "a", "b")
    return [case[k] for line in path.read_text().splitlines() for case in [json.loads(line)] for k in keys if k in case]


def pydoc_paragraphs() -> list[str]:
    from pydoc_data.topics import topics

    return [p for text in topics.values() for p in text.split("\n\n") if p.strip()]


def package_readmes() -> list[str]:
    """Paragraphs of the installed packages' descriptions: technical prose that talks about keys and tokens."""
    from importlib.metadata import distributions

    out: list[str] = []
    for dist in distributions():
        text = dist.read_text("METADATA") or ""
        out += [p for p in text.split("\n\n") if p.strip()]
    return out


def stdlib_source() -> str:
    files = sorted(STDLIB.glob("*.py"))
    return "\n".join(f.read_text(errors="replace") for f in files)


def timed(texts: list[str]) -> tuple[float, float]:
    times = []
    for text in texts:
        started = time.perf_counter()
        redact(text)
        times.append((time.perf_counter() - started) * 1e6)
    return p50_p95(times)


def firing(texts: Iterable[str]) -> tuple[int, int, Counter[str], list[str]]:
    count = fired = 0
    rules: Counter[str] = Counter()
    examples: list[str] = []
    for text in texts:
        count += 1
        cleaned, found = redact(text)
        if found:
            fired += 1
            rules.update(found)
            line = next(ln for ln in cleaned.splitlines() if "[REDACTED:" in ln)
            examples.append(line.strip()[:110])
    return count, fired, rules, examples


def _pick(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
# rule -> a generator of one secret in its published shape
SHAPES: dict[str, Callable[[random.Random], str]] = {
    "gitlab_token": lambda r: "glpat-" + _pick(r, ALNUM + "_-", 20),
    "github_token": lambda r: "ghp_" + _pick(r, ALNUM, 36),
    "openai_api_key": lambda r: "sk-proj-" + _pick(r, ALNUM + "_-", 48),
    "anthropic_api_key": lambda r: "sk-ant-api03-" + _pick(r, ALNUM + "_-", 93),
    "google_api_key": lambda r: "AIza" + _pick(r, ALNUM + "_-", 35),
    "aws_access_key_id": lambda r: "AKIA" + _pick(r, ALNUM[:26] + "0123456789", 16),
    "slack_token": lambda r: "xoxb-" + _pick(r, "0123456789", 12) + "-" + _pick(r, ALNUM, 24),
    "stripe_key": lambda r: "sk_live_" + _pick(r, ALNUM, 24),
    "sendgrid_api_key": lambda r: "SG." + _pick(r, ALNUM + "_-", 22) + "." + _pick(r, ALNUM + "_-", 43),
    "twilio_api_key": lambda r: "SK" + _pick(r, HEX, 32),
    "npm_token": lambda r: "npm_" + _pick(r, ALNUM, 36),
    "pypi_token": lambda r: "pypi-AgEIcHlwaS5vcmc" + _pick(r, ALNUM + "_-", 70),
    "huggingface_token": lambda r: "hf_" + _pick(r, ALNUM[:52], 34),
    "discord_token": lambda r: r.choice("MNO") + _pick(r, ALNUM, 25) + "." + _pick(r, ALNUM + "_-", 6) + "."
    + _pick(r, ALNUM + "_-", 38),
    "telegram_bot_token": lambda r: _pick(r, "0123456789", 10) + ":AA" + _pick(r, ALNUM + "_-", 33),
    "digitalocean_token": lambda r: "dop_v1_" + _pick(r, HEX, 64),
    "shopify_token": lambda r: "shpat_" + _pick(r, HEX, 32),
    "databricks_token": lambda r: "dapi" + _pick(r, HEX, 32),
    "docker_hub_token": lambda r: "dckr_pat_" + _pick(r, ALNUM + "_-", 27),
    "jwt": lambda r: "eyJ" + _pick(r, ALNUM, 30) + ".eyJ" + _pick(r, ALNUM, 40) + "." + _pick(r, ALNUM + "_-", 43),
    "azure_storage_key": lambda r: "AccountKey=" + _pick(r, B64, 86) + "==",
    "azure_ad_client_secret": lambda r: _pick(r, ALNUM, 3) + r.choice("0123456789") + "Q~"
    + _pick(r, ALNUM + "_~.-", 34),
}
SENTENCES = (
    "please use {} for the deploy",
    "the key ({}) was rotated yesterday",
    "export TOKEN_VALUE {}",
    "{}",
    "config: {}, region eu-west-1",
)


def recall(rng: random.Random, per_rule: int = 200) -> list[tuple[str, float]]:
    rows = []
    for rule, make in SHAPES.items():
        hit = 0
        for _ in range(per_rule):
            secret = make(rng)
            cleaned, _ = redact(rng.choice(SENTENCES).format(secret))
            core = secret.split("=", 1)[-1] if rule == "azure_storage_key" else secret
            hit += core not in cleaned
        rows.append((rule, 100.0 * hit / per_rule))
    return rows


def with_secrets(texts: list[str], rng: random.Random) -> list[str]:
    """Each text cut to about 1 KB with three secrets in it (a token, an .env password, a JWT)."""
    out = []
    for text in texts:
        secrets = (f" push with {SHAPES['gitlab_token'](rng)} then\nDB_PASSWORD={_pick(rng, ALNUM, 14)}\n"
                   f"and send Bearer {SHAPES['jwt'](rng)} ")
        out.append(text[: CHUNK - len(secrets)] + secrets)
    return out


def main() -> int:
    turns, plans, updates = locomo_turns(), plan_texts(), update_texts()
    paragraphs = pydoc_paragraphs()
    source = stdlib_source()
    if not turns:
        print(f"dev data missing under {DATA_DIR}: dev rows skipped", file=sys.stderr)

    print("Cost of redact() on one text, microseconds")
    cost_rows = []
    for label, texts in (
        ("dev prose (LoCoMo), 1 KB", chunks(" ".join(turns))),
        ("dev plans (JSON), 1 KB", chunks(" ".join(plans))),
        ("held-apart docs (pydoc), 1 KB", chunks("\n\n".join(paragraphs))),
        ("held-apart code (stdlib), 1 KB", chunks(source)),
        ("1 KB prose with 3 secrets", with_secrets(chunks(" ".join(turns) or "\n\n".join(paragraphs)),
                                                  random.Random(7))),
        ("one LoCoMo turn (~130 chars)", turns[:2000]),
    ):
        if texts:
            p50, p95 = timed(texts)
            cost_rows.append((label, len(texts), p50, p95))
    print_table(("texts", "n", "p50 us", "p95 us"), cost_rows)

    print("\nFalse positives: texts with no secret that a rule fired on")
    fp_rows = []
    shown: list[tuple[str, list[str]]] = []
    for label, texts in (
        ("dev: LoCoMo turns", turns),
        ("dev: plan-cache prompts + actions", plans),
        ("dev: updates cases", updates),
        ("held-apart: pydoc topic paragraphs", paragraphs),
        ("held-apart: installed package READMEs", package_readmes()),
    ):
        if texts:
            count, fired, rules, examples = firing(texts)
            fp_rows.append((label, count, fired, f"{100.0 * fired / count:.3f}%", dict(rules.most_common(4))))
            shown.append((label, examples[:5]))
    print_table(("corpus", "texts", "fired", "share", "rules"), fp_rows)
    for label, examples in shown:
        for example in examples:
            print(f"  {label}: {example}")

    count, fired, rules, examples = firing(source.split("\n\n"))
    print(f"\nStandard library source ({len(source) // 1024} KB, {count} paragraphs): fired on {fired}, "
          f"rules {dict(rules)}; these hold real example credentials, read them:")
    for example in examples[:15]:
        print(f"  {example}")

    print("\nRecall on generated secrets (200 per rule, random within the published shape)")
    rows = recall(random.Random(20261122))
    print_table(("rule", "redacted %"), rows)
    print(f"mean {statistics.mean(r for _, r in rows):.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
