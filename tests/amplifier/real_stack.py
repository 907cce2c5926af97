"""Whole-turn tests in a real amplifier-core session: the real loop-basic or loop-streaming orchestrator
(installed by ``make install`` from ``../shared/vendor``; the tests skip, saying so, when they are not),
our module loaded and validated by the real ModuleLoader from its folder, and from
``tests/amplifier/amplifier_stack`` a context manager that compacts like context-simple, a provider
that plays a script and records every request it is sent (the LLM's test double), a task tool and a
hook module that names the agent (context-simple and those modules are not installable here)."""

from __future__ import annotations

import importlib.util
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from amplifier_core.module_sources import ModuleNotFoundError as SourceNotFound

import amplifier_module_tool_agent_memory as agent_memory

STACK = Path(__file__).resolve().parent / "amplifier_stack"
MODULE_ID = "tool-agent-memory"
MODULE_DIR = Path(agent_memory.__file__).resolve().parent.parent
ORCHESTRATORS = ("loop-basic", "loop-streaming")
RECORDED = ("plan:stored", "plan:reward", "plan:stale", "cache:block_closed", "cache:compacted",
            "context:compaction", "orchestrator:complete", "module:load_failed", "memory:recalled")


def orchestrator_installed(module_id: str) -> bool:
    """Whether the real orchestrator ``module_id`` is installed in this environment."""
    return importlib.util.find_spec("amplifier_module_" + module_id.replace("-", "_")) is not None


class _FolderSource:
    def __init__(self, path: Path) -> None:
        self.path = path

    def resolve(self) -> Path:
        return self.path


class LocalSources:
    """The app's module-source resolver, reduced to these tests: our module from its folder (so the loader
    validates it, mounting it on a MockCoordinator first); anything else falls back to the loader's own
    discovery (installed entry points, the stack's packages on sys.path)."""

    def resolve(self, module_id: str, source_hint: Any = None, profile_hint: Any = None) -> _FolderSource:
        if module_id == MODULE_ID:
            return _FolderSource(MODULE_DIR)
        raise SourceNotFound(module_id)


@dataclass
class Stack:
    """A running session and what the test reads from it."""

    session: Any
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    @property
    def coordinator(self) -> Any:
        return self.session.coordinator

    @property
    def provider(self) -> Any:
        return self.coordinator.get("providers")["scripted"]

    @property
    def context(self) -> Any:
        return self.coordinator.get("context")

    def tool(self, name: str) -> Any:
        return self.coordinator.get("tools")[name]

    def of(self, event: str) -> list[dict[str, Any]]:
        return [data for name, data in self.events if name == event]

    async def turn(self, prompt: str, *responses: Any) -> str:
        """One user turn: the provider answers the loop's requests with ``responses``, in order."""
        self.provider.script = list(responses)
        result: str = await self.session.execute(prompt)
        assert not self.provider.script, "the loop stopped before the script ended"
        return result


StackFactory = Callable[..., Awaitable[Stack]]


def calls(*steps: tuple[str, dict[str, Any]]) -> Any:
    """A scripted response that calls the tools ``(name, arguments)`` in one group."""
    from amplifier_module_provider_scripted import calls as scripted_calls

    return scripted_calls(*steps)


def say(text: str) -> Any:
    """A scripted final text answer."""
    from amplifier_module_provider_scripted import say as scripted_say

    return scripted_say(text)
