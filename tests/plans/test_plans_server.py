"""plan_lookup's three answers on the Qdrant server backend (qdrant-client local mode, see test_server_backend)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from data import SERVER

pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")

GZIP = "Compress the nightly log archive with gzip"
ACTIONS = [{"tool": "run_command", "args": {"command": "gzip -9 /var/log/nightly.tar"}}]


async def server_tools(call: Any, mount_tools: Callable[..., Any], prompt: str) -> dict[str, Any]:
    tools, _ = await mount_tools(**SERVER)
    await call(tools["plan_store"], {"prompt": prompt, "actions": ACTIONS})
    return tools


async def lookup(call: Any, tools: dict[str, Any], prompt: str) -> dict[str, Any]:
    return await call(tools["plan_lookup"], {"prompt": prompt})


async def test_a_trivial_rewording_is_a_hit_on_the_server(
    server: Any, mount_tools: Callable[..., Any], call: Any
) -> None:
    tools = await server_tools(call, mount_tools, GZIP)
    out = await lookup(call, tools, "Please compress the nightly log archive with gzip.")
    assert (out["answer"], out["actions"]) == ("hit", ACTIONS)


async def test_a_look_alike_is_a_candidate_on_the_server(
    server: Any, mount_tools: Callable[..., Any], call: Any
) -> None:
    tools = await server_tools(call, mount_tools, GZIP)
    out = await lookup(call, tools, "Shrink last night's logs into a gzip bundle")
    assert out["answer"] == "candidate"
    assert (out["candidates"][0]["prompt"], out["candidates"][0]["actions"]) == (GZIP, ACTIONS)


async def test_a_swapped_order_is_a_candidate_naming_it_on_the_server(
    server: Any, mount_tools: Callable[..., Any], call: Any
) -> None:
    tools = await server_tools(call, mount_tools, "Sync the calendar from Outlook to Google")
    out = await lookup(call, tools, "Sync the calendar from Google to Outlook")
    assert out["answer"] == "candidate"
    assert out["candidates"][0]["differences"] == ["order: outlook to google -> google to outlook"]
