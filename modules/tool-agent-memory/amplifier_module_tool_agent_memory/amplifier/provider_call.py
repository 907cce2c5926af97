"""One short call to the session's LLM provider from a worker thread: what the LLM summariser and the
provider judge share.

The call is made the way foundation's own background calls (hooks-session-naming) make it: the
session's first (priority) provider, ``metadata={"stream": False}`` so the answer does not stream into
the user's UI as if it were the assistant's, ``extended_thinking=False`` so a provider with
session-level thinking neither refuses nor inflates the call, a small ``max_output_tokens``, and no
``temperature`` (refused by some models while thinking is on). The services run in worker threads, so
the call is scheduled on the tool call's event loop and waited for with a timeout.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

logger = logging.getLogger(__name__)


async def _complete(coordinator: Any, prompt: str, max_output_tokens: int) -> str:
    from amplifier_core.message_models import ChatRequest, Message

    providers = coordinator.get("providers") if coordinator is not None else None
    if not providers:
        raise RuntimeError("no provider is mounted in this session")
    provider = next(iter(providers.values()))
    request = ChatRequest(
        messages=[Message(role="user", content=prompt)], max_output_tokens=max_output_tokens,
        metadata={"stream": False},
    )
    response = await provider.complete(request, extended_thinking=False)
    parts = [getattr(block, "text", None) for block in getattr(response, "content", None) or []]
    return "".join(p for p in parts if isinstance(p, str))


def ask_provider(
    coordinator: Any,
    prompt: str,
    *,
    max_output_tokens: int,
    loop: asyncio.AbstractEventLoop | None,
    timeout_s: float,
    fallback: str,
) -> str | None:
    """The provider's text answer to ``prompt``, run on ``loop`` from a worker thread; None on any failure, a
    timeout, no loop, or when called on the loop's own thread (waiting there would deadlock). ``fallback``
    names, in the warning logged on a failure, what the caller does instead."""
    if loop is None or loop.is_closed():
        return None
    try:
        asyncio.get_running_loop()
        return None
    except RuntimeError:
        pass
    future = asyncio.run_coroutine_threadsafe(_complete(coordinator, prompt, max_output_tokens), loop)
    try:
        return future.result(timeout_s)
    except Exception as exc:
        future.cancel()
        logger.warning(f"provider call failed; {fallback}", extra={"error": repr(exc)[:300]})
        return None
