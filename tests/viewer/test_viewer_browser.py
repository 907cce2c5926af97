"""The viewer in a real browser: headless Chromium (Debian's package) driven by Playwright.

Set AGENT_MEMORY_SCREENSHOTS=docs/images to refresh the README's screenshots from these tests.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from typing import Any

import pytest

pytestmark = pytest.mark.browser

CHROMIUM = os.environ.get("AGENT_MEMORY_CHROMIUM", "/usr/bin/chromium")
# Chromium's own background traffic goes nowhere on a closed network; these keep it quiet.
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
async def page() -> AsyncIterator[Any]:
    """A fresh page of a headless Chromium; skips, saying why, where there is none."""
    if shutil.which(CHROMIUM) is None:
        pytest.skip(f"no Chromium at {CHROMIUM} (`make install` installs Debian's chromium as root)")
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        pytest.skip("playwright is not installed (it is in the dev and test extras)")
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            context = await browser.new_context(viewport={"width": 1280, "height": 860})
            yield await context.new_page()
        finally:
            await browser.close()


async def _shot(page: Any, name: str) -> None:
    folder = os.environ.get("AGENT_MEMORY_SCREENSHOTS")
    if folder:
        os.makedirs(folder, exist_ok=True)
        await page.screenshot(path=os.path.join(folder, name))


async def _seed(call: Any, served: Any) -> dict[str, Any]:
    old = await call.store(served.tools, "The team standup is at 9:30 every morning.", kind="fact", tags=["team"])
    new = await call.store(
        served.tools, "The team standup moved to 10:15 every morning.", kind="fact", supersedes=old["id"], tags=["team"]
    )
    await call.store(served.tools, "Deploys go through the blue-green pipeline on Tuesdays.", kind="decision")
    await call.store(served.tools, "Maya prefers reviews in the afternoon.", kind="preference", tags=["team"])
    hostile = await call.store(served.tools,
        'Pasted from a ticket: <script>window.__pwned = "script"</script><img src=x onerror="window.__pwned=\'img\'">',
        kind="note")
    await call(served.tools["memory_search"], {"query": "standup time"})
    rotate = {"tool": "bash", "args": {"cmd": "certbot renew"}}
    await call(served.tools["plan_store"], {"prompt": "Rotate the staging TLS certificate", "actions": [rotate]})
    await call(served.tools["plan_lookup"], {"prompt": "Rotate the staging TLS certificate"})
    await call(served.tools["plan_lookup"], {"prompt": "What is the weather in Lisbon"})
    await call(served.tools["cache_write"], {
        "kind": "warning", "content": "The migration locks the orders table for ~2 minutes.", "scope": "task:migrate",
    })
    return {"old": old, "new": new, "hostile": hostile}


async def test_search_filter_open_a_chain_and_forget_with_confirmation(served: Any, page: Any, call: Any) -> None:
    from playwright.async_api import expect

    seeded = await _seed(call, served)
    await page.goto(served.viewer.url)
    await page.wait_for_selector("#memory-list li")
    assert await page.locator("#identity").inner_text() == "alice"
    assert await page.locator("#memory-list li").count() == 5
    await _shot(page, "viewer-memories.png")

    await page.fill("#q", "when is the standup")
    await page.click("#memory-filters button[type=submit]")
    await expect(page.locator("#memory-status")).to_contain_text("results")
    first = await page.locator("#memory-list li .content").first.inner_text()
    assert "standup" in first

    await page.fill("#q", "")
    await page.select_option("#memory-filters select[name=kind]", "preference")
    await page.click("#memory-filters button[type=submit]")
    await expect(page.locator("#memory-list li")).to_have_count(1)
    assert await page.locator("#memory-list li .content").inner_text() == "Maya prefers reviews in the afternoon."

    await page.select_option("#memory-filters select[name=kind]", "")
    await page.uncheck("#memory-filters input[name=include_superseded]")
    await page.click("#memory-filters button[type=submit]")
    await expect(page.locator("#memory-list li")).to_have_count(4)

    await page.click(f"#memory-list li[data-id='{seeded['new']['id']}']")
    await page.wait_for_selector("#timeline li")
    steps = await page.locator("#timeline li .content").all_inner_texts()
    assert steps == ["The team standup is at 9:30 every morning.", "The team standup moved to 10:15 every morning."]
    await _shot(page, "viewer-chain.png")

    await page.click("#forget")
    assert await page.locator("#confirm").is_visible()
    await page.click("#confirm-no")  # cancelled: nothing happens
    assert served.runtime.memory().get(seeded["new"]["id"])["id"] == seeded["new"]["id"]
    await page.click("#forget")
    await page.click("#confirm-yes")
    await page.wait_for_selector("#action-done")
    from amplifier_module_tool_agent_memory.errors import NotFound

    with pytest.raises(NotFound):
        served.runtime.memory().get(seeded["new"]["id"])


async def test_markup_in_memories_never_runs(served: Any, page: Any, call: Any) -> None:
    seeded = await _seed(call, served)
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: dialogs.append(dialog.message))
    await page.goto(served.viewer.url)
    await page.wait_for_selector("#memory-list li")
    await page.click(f"#memory-list li[data-id='{seeded['hostile']['id']}']")
    await page.wait_for_selector("#memory-detail .content")
    assert await page.evaluate("window.__pwned === undefined")
    assert dialogs == []
    shown = await page.locator(f"#memory-list li[data-id='{seeded['hostile']['id']}'] .content").inner_text()
    assert "<script>" in shown and "onerror" in shown  # shown as the text it is
    assert await page.locator("#memory-list img, #memory-detail img, #memory-list script").count() == 0


async def test_working_memory_plans_and_charts_render(served: Any, page: Any, call: Any) -> None:
    await _seed(call, served)
    await page.goto(served.viewer.url)
    await page.wait_for_selector("#memory-list li")

    await page.click("nav button[data-tab=working]")
    await page.wait_for_selector("#pack")
    assert "orders table" in await page.locator("#pack").inner_text()
    assert await page.locator("#scope").input_value() == "task:migrate"

    await page.click("nav button[data-tab=plans]")
    await page.wait_for_selector("#plan-table tbody tr.plan")
    assert await page.locator("#plan-table tbody tr.plan td").first.inner_text() == "Rotate the staging TLS certificate"
    await page.click("#plan-table tbody tr.plan")
    await page.wait_for_selector("#plan-detail pre")
    assert "certbot renew" in await page.locator("#plan-detail pre").first.inner_text()

    await page.click("nav button[data-tab=activity]")
    await page.wait_for_selector(".chart svg rect")
    titles = await page.locator(".chart h3").all_inner_texts()
    assert titles == ["stores", "searches", "recalls", "plan answers"]
    bars = await page.locator(".chart[data-chart='plan answers'] svg rect title").all_text_contents()
    assert any(text.endswith("hits: 1") for text in bars) and any(text.endswith("misses: 1") for text in bars)
    await _shot(page, "viewer-activity.png")
