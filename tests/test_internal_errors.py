"""An internal error (a bug, an engine failure) is answered, never raised, and its message is redacted and
cut: an exception's text may quote what it choked on, secrets included. Its log line and traceback are
redacted too. Checked through the tools on the real engine, with a service made to fail."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from amplifier_module_tool_agent_memory.memory.service import MemoryService
from amplifier_module_tool_agent_memory.plans.service import PlanService

SECRET = "Hq4mZt8LpW2xKv7N"
BEARER = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLXNlY3JldA"


def _failing(*_: Any, **__: Any) -> Any:
    raise RuntimeError(
        f"could not decode point: DB_PASSWORD={SECRET} Authorization: Bearer {BEARER} " + "payload " * 200
    )


@pytest.mark.parametrize(("tool", "method", "service", "args"), [
    ("memory_search", "search", MemoryService, {"query": "release dates"}),
    ("memory_store", "store", MemoryService, {"content": "The release train leaves on Tuesdays"}),
    ("plan_store", "store", PlanService, {"prompt": "rotate the logs", "actions": [{"tool": "bash", "args": {}}]}),
])
async def test_an_internal_error_is_answered_redacted_and_cut(
    tools: dict[str, Any], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
    tool: str, method: str, service: type, args: dict[str, Any], call: Any,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setattr(service, method, _failing)
    error = await call.error(tools[tool], args)
    assert error["type"] == "internal_error" and error["identity"] == "alice"
    message = error["message"]
    assert message.startswith(f"{tool} failed: RuntimeError: could not decode point: DB_PASSWORD=[REDACTED:")
    assert SECRET not in message and BEARER not in message
    assert len(message) <= len(f"{tool} failed: RuntimeError: ") + 300  # cut: the payload dump is not echoed
    failed = [r for r in caplog.records if r.getMessage() == "tool failed"]
    assert len(failed) == 1 and failed[0].exc_text and "RuntimeError" in failed[0].exc_text
    logged = " ".join(f"{r.getMessage()} {r.exc_text} {r.__dict__}" for r in caplog.records)
    assert SECRET not in logged and BEARER not in logged


async def test_the_tool_works_again_once_the_fault_is_gone(
    tools: dict[str, Any], monkeypatch: pytest.MonkeyPatch, call: Any
) -> None:
    with monkeypatch.context() as patch:
        patch.setattr(MemoryService, "store", _failing)
        assert await call.error(tools["memory_store"], {"content": "Deploys freeze on Fridays"})
    stored = await call(tools["memory_store"], {"content": "Deploys freeze on Fridays"})
    assert stored["created"] is True
