"""The viewer at size: first page and search latency over HTTP, at N memories (default 10k).

Fills a fresh store with LoCoMo turns (``../shared/data/locomo``; skips cleanly without it), starts
the viewer on it with the store open and the model loaded (as ``agent-memory ui`` does before it
prints its URL), then measures, side by side in one run:

- first page in headless Chromium (Debian's, through Playwright; skipped without them): from the
  request of the URL to the full page (header totals and the first page of memories drawn);
- first page over plain HTTP: the page, its script and style, and the two API answers it asks for;
- search: ``/api/memories?query=...`` with LoCoMo questions, against ``memory_search`` called on
  the same runtime without HTTP (what the viewer adds).

    python benchmarks/viewer.py [--memories 10000] [--searches 100] [--pages 10]

Prints medians and p95s in milliseconds; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _common import DATA_DIR, p50_p95, print_table

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]


def _locomo() -> tuple[list[str], list[str]] | None:
    path = DATA_DIR / "locomo" / "locomo-dev.json"
    if not path.exists():
        return None
    samples = json.loads(path.read_text(encoding="utf-8"))
    turns: list[str] = []
    questions: list[str] = []
    for sample in samples:
        conv = sample["conversation"]
        for key, value in conv.items():
            if key.startswith("session_") and isinstance(value, list):
                turns += [f"{t['speaker']}: {t['text']}" for t in value if t.get("text")]
        questions += [qa["question"] for qa in sample["qa"] if qa.get("question")]
    return turns, questions


def _fill(rt: Any, turns: list[str], n: int) -> float:
    from amplifier_module_tool_agent_memory.memory.models import MemoryRecord

    start = datetime(2026, 1, 1, tzinfo=UTC)
    records = []
    for i in range(n):
        text = turns[i % len(turns)] + ("" if i < len(turns) else f" (copy {i // len(turns)})")
        records.append(
            MemoryRecord(id=f"00000000-0000-4000-8000-{i:012d}", content=text, kind="note",
                         created_at=start + timedelta(minutes=i))
        )
    started = time.perf_counter()
    for at in range(0, n, 1000):
        rt.memory().import_records(records[at : at + 1000])
    return time.perf_counter() - started


def _get(url: str, token: str) -> bytes:
    request = urllib.request.Request(url, headers={"X-Agent-Memory-Token": token})
    with urllib.request.urlopen(request, timeout=60) as response:
        body: bytes = response.read()
        return body


def _http_first_page(base: str, token: str) -> float:
    started = time.perf_counter()
    for path in ("/", "/static/app.js", "/static/style.css", "/api/summary", "/api/memories?include_superseded=true"):
        _get(base + path, token)
    return (time.perf_counter() - started) * 1000


async def _browser_first_pages(url: str, pages: int) -> list[float] | None:
    if shutil.which(CHROMIUM) is None:
        print(f"browser first page: skipped (no {CHROMIUM})")
        return None
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        print("browser first page: skipped (playwright not installed)")
        return None
    times: list[float] = []
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            for _ in range(pages + 1):
                page = await (await browser.new_context()).new_page()
                started = time.perf_counter()
                await page.goto(url)
                await page.wait_for_selector("#memory-list li")
                await page.wait_for_selector("#totals:not(:empty)")
                times.append((time.perf_counter() - started) * 1000)
                await page.context.close()
        finally:
            await browser.close()
    return times[1:]  # the first opens the browser's caches


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--searches", type=int, default=100)
    parser.add_argument("--pages", type=int, default=10)
    args = parser.parse_args()
    data = _locomo()
    if data is None:
        print(f"SKIP: no LoCoMo data under {DATA_DIR} (see ../shared/data/README.md)")
        return 0
    turns, questions = data

    from amplifier_module_tool_agent_memory.config import parse_config
    from amplifier_module_tool_agent_memory.identity import ResolvedIdentity
    from amplifier_module_tool_agent_memory.memory.models import MemorySearchInput
    from amplifier_module_tool_agent_memory.runtime import AgentMemory
    from amplifier_module_tool_agent_memory.viewer.server import Viewer

    with tempfile.TemporaryDirectory() as root:
        rt = AgentMemory(parse_config({"storage_root": root}), ResolvedIdentity("bench", "config"), session_id="b")
        fill_s = _fill(rt, turns, args.memories)
        print(f"store of {args.memories} LoCoMo turns filled in {fill_s:.0f} s")
        viewer = Viewer(rt)
        viewer.start(0)
        base = f"http://127.0.0.1:{viewer.port}"
        try:
            _http_first_page(base, viewer.token)  # warm
            http_pages = [_http_first_page(base, viewer.token) for _ in range(args.pages)]
            browser_pages = asyncio.run(_browser_first_pages(viewer.url, args.pages))
            picked = [questions[i % len(questions)] for i in range(args.searches)]
            over_http: list[float] = []
            direct: list[float] = []
            for question in picked:  # alternated, so drift hits both alike
                started = time.perf_counter()
                _get(f"{base}/api/memories?{urllib.parse.urlencode({'query': question})}", viewer.token)
                over_http.append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                rt.memory().search(MemorySearchInput(query=question, limit=20))
                direct.append((time.perf_counter() - started) * 1000)
        finally:
            viewer.stop()
            rt.close()
    rows: list[list[object]] = []
    if browser_pages:
        rows.append(["first page, Chromium (request to drawn list)", *p50_p95(browser_pages), len(browser_pages)])
    rows.append(["first page, HTTP (page, script, style, 2 API calls)", *p50_p95(http_pages), len(http_pages)])
    rows.append(["search over HTTP (/api/memories?query=)", *p50_p95(over_http), len(over_http)])
    rows.append(["memory_search on the same runtime, no HTTP", *p50_p95(direct), len(direct)])
    print(f"\nviewer at {args.memories} memories (ms)")
    print_table(["what", "p50", "p95", "n"], rows)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main())
