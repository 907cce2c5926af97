"""Automatic plan capture end to end, in a real amplifier-core AmplifierSession.

The module is mounted on a real session's coordinator next to two real task tools working
on a temporary project. ``ScriptedLoop`` plays a scripted model's tool calls with exactly
the event sequence amplifier-module-loop-basic emits for a turn (prompt:submit,
provider:request/response, per parallel group tool:pre -> execute -> tool:post or tool:error,
prompt:complete, orchestrator:complete with its status), through ``coordinator.hooks.emit``.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from amplifier_core import AmplifierSession, HookResult, ToolResult

import amplifier_module_tool_agent_memory as agent_memory
from amplifier_module_tool_agent_memory.amplifier.plan_capture import is_replayable
from amplifier_module_tool_agent_memory.embeddings.providers import CachedEmbedder

Call = tuple[str, dict[str, Any]]
SESSION_PLAN: dict[str, Any] = {"session": {"orchestrator": "loop-basic", "context": "context-simple"}}
FASTER = "Make the player move faster"
REWORDED = "Please make the player move faster!"
LOOSE = "The player should move faster"
EDIT: Call = ("edit_file", {"path": "Player.cs", "find": "speed = 5f", "replace": "speed = 7.5f"})


class EditFile:
    """A real task tool: replace text in a project file; fails when the text is not there."""

    name = "edit_file"
    description = "Replace `find` with `replace` in the file at `path`."
    def __init__(self, project: Path) -> None:
        self.project = project
        self.input_schema: dict[str, Any] = {"type": "object", "properties": {}}

    async def execute(self, input: dict[str, Any]) -> ToolResult:  # noqa: A002 - the Tool protocol's name
        path = self.project / input["path"]
        text = path.read_text()
        if input["find"] not in text:
            return ToolResult(success=False, error={"message": f"{input['find']!r} not found in {input['path']}"})
        path.write_text(text.replace(input["find"], input["replace"]))
        return ToolResult(success=True, output={"edited": input["path"]})


class CodeSearch:
    """A real read-only tool: the project files that contain a text."""

    name = "code_search"
    description = "Files containing `query`."
    def __init__(self, project: Path) -> None:
        self.project = project
        self.input_schema: dict[str, Any] = {"type": "object", "properties": {}}

    async def execute(self, input: dict[str, Any]) -> ToolResult:  # noqa: A002
        hits = [p.name for p in self.project.iterdir() if input["query"] in p.read_text()]
        return ToolResult(success=bool(hits), output={"files": hits}, error=None if hits else {"message": "no match"})


class ScriptedLoop:
    """Plays one turn of scripted tool calls with the events loop-basic emits (see the module docstring)."""

    def __init__(self, coordinator: Any, dump_results: bool = False) -> None:
        self.coordinator = coordinator
        self.hooks = coordinator.hooks
        # loop-basic passes the ToolResult itself (the kernel hands handlers its str()); other
        # orchestrators pass a dump: dump_results plays the latter.
        self.dump_results = dump_results

    async def _one(self, name: str, args: dict[str, Any], group_id: str) -> ToolResult | None:
        await self.hooks.emit("tool:pre", {"tool_name": name, "tool_input": args, "parallel_group_id": group_id})
        tool = (self.coordinator.get("tools") or {}).get(name)
        if tool is None:
            error = {"type": "RuntimeError", "msg": f"Error: Tool '{name}' not found"}
            await self.hooks.emit("tool:error", {"tool_name": name, "error": error, "parallel_group_id": group_id})
            return None
        try:
            result: ToolResult = await tool.execute(args)
        except Exception as exc:
            error = {"type": type(exc).__name__, "msg": str(exc)}
            await self.hooks.emit("tool:error", {"tool_name": name, "error": error, "parallel_group_id": group_id})
            return None
        result_data: Any = result.to_dict() if hasattr(result, "to_dict") else result
        if self.dump_results:
            result_data = result.model_dump()
        await self.hooks.emit(
            "tool:post",
            {"tool_name": name, "tool_input": args, "result": result_data, "parallel_group_id": group_id},
        )
        return result

    async def turn(self, prompt: str, groups: list[list[Call]], status: str = "success") -> list[ToolResult | None]:
        """One user turn: each group is one model response whose calls run in parallel."""
        await self.hooks.emit("prompt:submit", {"prompt": prompt})
        results: list[ToolResult | None] = []
        for iteration, group in enumerate(groups):
            await self.hooks.emit("provider:request", {"provider": "scripted", "iteration": iteration})
            await self.hooks.emit("provider:response", {"provider": "scripted", "usage": None, "tool_calls": True})
            group_id = str(uuid.uuid4())
            results += await asyncio.gather(*(self._one(name, args, group_id) for name, args in group))
        await self.hooks.emit("prompt:complete", {"response_preview": "done", "length": 4})
        await self.hooks.emit(
            "orchestrator:complete", {"orchestrator": "loop-basic", "turn_count": len(groups), "status": status}
        )
        return results


class Session:
    """A real AmplifierSession with the module and the task tools mounted, and the plan events it saw."""

    def __init__(self, coordinator: Any, project: Path) -> None:
        self.coordinator = coordinator
        self.project = project
        self.loop = ScriptedLoop(coordinator)
        self.events: list[tuple[str, dict[str, Any]]] = []

    @property
    def tools(self) -> dict[str, Any]:
        return dict(self.coordinator.get("tools") or {})

    async def lookup(self, prompt: str) -> dict[str, Any]:
        result = await self.tools["plan_lookup"].execute({"prompt": prompt})
        assert result.success, result.error
        return dict(result.output)

    def plan(self, plan_id: str) -> dict[str, Any]:
        return dict(self.tools["plan_lookup"].runtime.plans().get(plan_id))

    def plan_count(self) -> int:
        return int(self.tools["plan_lookup"].runtime.plans().count())

    def seen(self, event: str) -> list[dict[str, Any]]:
        return [data for name, data in self.events if name == event]


@pytest.fixture
async def open_session(
    root: Path, tmp_path: Path, embedder: CachedEmbedder
) -> AsyncIterator[Callable[..., Any]]:
    """Open real sessions (same storage root) with the module mounted; cleaned up at teardown."""
    opened: list[Any] = []
    project = tmp_path / "project"
    project.mkdir()
    (project / "Player.cs").write_text("class Player { float speed = 5f; float jump = 8f; }")

    async def factory(**config: Any) -> Session:
        coordinator = AmplifierSession(SESSION_PLAN).coordinator
        opened.append(coordinator)
        cleanup = await agent_memory.mount(
            coordinator, {"storage_root": str(root), "agent_identity": "alice", **config}
        )
        coordinator.register_cleanup(cleanup)
        await coordinator.mount("tools", EditFile(project), name="edit_file")
        await coordinator.mount("tools", CodeSearch(project), name="code_search")
        session = Session(coordinator, project)

        async def record(event: str, data: dict[str, Any]) -> HookResult:
            session.events.append((event, dict(data)))
            return HookResult(action="continue")

        for event in ("plan:stored", "plan:reward", "plan:stale", "plan:used"):
            coordinator.hooks.register(event, record, name=f"test-record-{event}")
        return session

    yield factory
    for coordinator in opened:
        await coordinator.cleanup()


async def test_successful_turn_is_stored_as_the_plan_of_its_prompt(open_session: Callable[..., Any]) -> None:
    session = await open_session()
    await session.loop.turn(
        FASTER,
        [
            [("plan_lookup", {"prompt": FASTER}), ("code_search", {"query": "speed"})],
            [EDIT, ("memory_store", {"content": "Player speed is set in Player.cs"})],
        ],
    )
    hit = await session.lookup(FASTER)
    assert hit["hit"] is True
    assert hit["actions"] == [{"tool": EDIT[0], "args": EDIT[1]}]
    assert [e["plan_id"] for e in session.seen("plan:stored")] == [hit["plan_id"]]
    assert session.seen("plan:stored")[0]["source"] == "auto_capture"


async def test_captured_plan_answers_a_rewording_in_a_later_session(open_session: Callable[..., Any]) -> None:
    first = await open_session()
    await first.loop.turn(FASTER, [[EDIT]])
    later = await open_session()
    hit = await later.lookup(REWORDED)
    assert (hit["hit"], hit["prompt"]) == (True, FASTER)
    near = await later.lookup(LOOSE)
    assert (near["answer"], near["candidates"][0]["prompt"]) == ("candidate", FASTER)


async def test_parallel_calls_are_all_kept_as_steps_of_the_plan(
    open_session: Callable[..., Any],
) -> None:
    # Parallel calls run concurrently, so their tool:pre events may arrive in either order;
    # the plan keeps every one of them (in arrival order), and replaying them in either order is the same.
    session = await open_session()
    jump: Call = ("edit_file", {"path": "Player.cs", "find": "jump = 8f", "replace": "jump = 16f"})
    await session.loop.turn("Make the player faster and double the jump", [[EDIT, jump]])
    hit = await session.lookup("Make the player faster and double the jump")
    assert sorted(step["args"]["find"] for step in hit["actions"]) == ["jump = 8f", "speed = 5f"]


async def test_turn_with_a_failed_call_is_not_stored(open_session: Callable[..., Any]) -> None:
    session = await open_session()
    missing: Call = ("edit_file", {"path": "Player.cs", "find": "gravity = 9f", "replace": "gravity = 4f"})
    await session.loop.turn("Lower the gravity", [[EDIT], [missing]])
    assert session.plan_count() == 0
    assert session.seen("plan:stored") == []


async def test_turn_with_a_call_of_an_unknown_tool_is_not_stored(open_session: Callable[..., Any]) -> None:
    session = await open_session()
    await session.loop.turn(FASTER, [[EDIT, ("run_tests", {})]])
    assert session.plan_count() == 0


async def test_turn_of_read_only_lookups_only_is_not_stored(open_session: Callable[..., Any]) -> None:
    session = await open_session()
    await session.loop.turn("Where is the player speed set?", [[("code_search", {"query": "speed"})]])
    assert session.plan_count() == 0


async def test_cancelled_turn_is_not_stored(open_session: Callable[..., Any]) -> None:
    session = await open_session()
    await session.loop.turn(FASTER, [[EDIT]], status="cancelled")
    assert session.plan_count() == 0


async def test_auto_capture_off_stores_nothing(open_session: Callable[..., Any]) -> None:
    session = await open_session(plans={"auto_capture": False})
    await session.loop.turn(FASTER, [[EDIT]])
    assert session.plan_count() == 0


async def test_failed_replay_of_a_cached_plan_makes_it_stale(open_session: Callable[..., Any]) -> None:
    session = await open_session()
    await session.loop.turn(FASTER, [[EDIT]])  # captured; Player.cs now says 7.5f, so a replay fails
    results = await session.loop.turn(REWORDED, [[("plan_lookup", {"prompt": REWORDED})], [EDIT]])
    lookup, replay = results
    assert lookup is not None and lookup.output["hit"] is True
    assert replay is not None and replay.success is False
    plan_id = lookup.output["plan_id"]
    plan = session.plan(plan_id)
    assert (plan["stale"], plan["failures"], plan["score"]) == (True, 1, pytest.approx(0.7))
    assert [e["plan_id"] for e in session.seen("plan:stale")] == [plan_id]
    assert (await session.lookup(FASTER))["hit"] is False


async def test_failed_replay_is_seen_when_the_orchestrator_passes_result_dumps(
    open_session: Callable[..., Any],
) -> None:
    session = await open_session()
    session.loop = ScriptedLoop(session.coordinator, dump_results=True)
    await session.loop.turn(FASTER, [[EDIT]])
    results = await session.loop.turn(REWORDED, [[("plan_lookup", {"prompt": REWORDED})], [EDIT]])
    assert session.plan(results[0].output["plan_id"])["stale"] is True  # type: ignore[union-attr]


async def test_successful_replay_is_rewarded_and_not_stored_again(open_session: Callable[..., Any]) -> None:
    session = await open_session()
    await session.loop.turn(FASTER, [[EDIT]])
    session.project.joinpath("Player.cs").write_text("class Player { float speed = 5f; }")
    results = await session.loop.turn(REWORDED, [[("plan_lookup", {"prompt": REWORDED})], [EDIT]])
    plan = session.plan(results[0].output["plan_id"])  # type: ignore[union-attr]
    assert (plan["stale"], plan["rewards"], plan["successes"], plan["score"]) == (False, 1, 1, 1.0)
    assert session.plan_count() == 1


async def test_a_hit_the_agent_rewards_itself_is_rewarded_once(open_session: Callable[..., Any]) -> None:
    session = await open_session()
    await session.loop.turn(FASTER, [[EDIT]])
    session.project.joinpath("Player.cs").write_text("class Player { float speed = 5f; }")
    plan_id = (await session.lookup(FASTER))["plan_id"]
    await session.loop.turn(REWORDED, [[("plan_lookup", {"prompt": REWORDED})], [EDIT],
                                       [("plan_reward", {"plan_id": plan_id, "success": True})]])
    assert (session.plan(plan_id)["rewards"], session.plan(plan_id)["successes"]) == (1, 1)


async def test_a_candidate_replayed_unchanged_counts_as_a_use_and_is_not_stored(
    open_session: Callable[..., Any],
) -> None:
    session = await open_session()
    await session.loop.turn(FASTER, [[EDIT]])
    session.project.joinpath("Player.cs").write_text("class Player { float speed = 5f; }")
    results = await session.loop.turn(LOOSE, [[("plan_lookup", {"prompt": LOOSE})], [EDIT]])
    assert results[0] is not None and results[0].output["answer"] == "candidate"
    plan_id = results[0].output["candidates"][0]["plan_id"]
    plan = session.plan(plan_id)
    assert (plan["uses"], plan["rewards"], plan["successes"]) == (1, 1, 1)
    assert session.plan_count() == 1
    assert [e["plan_id"] for e in session.seen("plan:used")] == [plan_id]


async def test_an_adapted_candidate_is_stored_derived_from_it(open_session: Callable[..., Any]) -> None:
    session = await open_session()
    await session.loop.turn(FASTER, [[EDIT]])
    session.project.joinpath("Player.cs").write_text("class Player { float speed = 5f; }")
    slower: Call = ("edit_file", {"path": "Player.cs", "find": "speed = 5f", "replace": "speed = 2.5f"})
    prompt = "Make the player move slower"
    results = await session.loop.turn(prompt, [[("plan_lookup", {"prompt": prompt})], [slower]])
    assert results[0] is not None and results[0].output["answer"] == "candidate"
    template = results[0].output["candidates"][0]["plan_id"]
    stored = session.seen("plan:stored")[-1]["plan_id"]
    assert stored != template and session.plan(stored)["derived_from"] == template
    assert session.plan(template)["uses"] == 0


@pytest.mark.parametrize(
    ("tool", "replayable"),
    [
        ("edit_file", True),
        ("write_file", True),
        ("bash", True),
        ("rename_symbol", True),
        ("delete_search_index", True),
        ("read_file", False),
        ("readFile", False),
        ("grep", False),
        ("glob", False),
        ("code_search", False),
        ("web_fetch", False),
        ("list_dir", False),
        ("git_status", False),
        ("memory_store", False),
        ("cache_write", False),
        ("plan_store", False),
    ],
)
def test_plans_leave_out_our_own_tools_and_read_only_lookups(tool: str, replayable: bool) -> None:
    assert is_replayable(tool) is replayable


def test_configured_tools_are_left_out_of_plans() -> None:
    assert is_replayable("todo", skip=("todo",)) is False
