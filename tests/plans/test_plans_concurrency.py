"""Concurrent stores, lookups and rewards from many threads and two sessions of one identity lose no update."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from amplifier_module_tool_agent_memory.plans.models import PlanLookupInput, PlanRewardInput, PlanStoreInput
from amplifier_module_tool_agent_memory.plans.service import PlanService
from amplifier_module_tool_agent_memory.runtime import AgentMemory

PROMPT = "Make the player move faster"
STEPS = [{"tool": "edit_file", "args": {"path": "src/Player.cs", "find": "speed = 5f", "replace": "speed = 7.5f"}}]
THREADS = 8


@pytest.fixture(autouse=True)
def _switch_threads_often() -> Iterator[None]:
    """Make the interpreter switch threads every microsecond, so an unguarded read-modify-write would interleave."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def ema_of_failures(n: int, alpha: float = 0.3, score: float = 1.0) -> float:
    """The score after ``n`` failure rewards, applied one after another."""
    for _ in range(n):
        score = alpha * 0.0 + (1.0 - alpha) * score
    return score


def two_sessions(make_runtime: Callable[..., AgentMemory]) -> list[PlanService]:
    """The plan services of two sessions (runtimes) of identity alice in this process."""
    return [make_runtime(session_id="s1").plans(), make_runtime(session_id="s2").plans()]


def run_all(jobs: list[Callable[[], Any]]) -> list[Any]:
    """Run the jobs on THREADS threads; none starts before all are queued."""
    go = threading.Event()

    def gated(job: Callable[[], Any]) -> Any:
        go.wait(timeout=10)
        return job()

    with ThreadPoolExecutor(THREADS) as pool:
        futures = [pool.submit(gated, job) for job in jobs]
        go.set()
        return [f.result() for f in futures]


def store_input(prompt: str = PROMPT) -> PlanStoreInput:
    return PlanStoreInput.model_validate({"prompt": prompt, "actions": STEPS})


def failure(plan_id: str) -> PlanRewardInput:
    return PlanRewardInput.model_validate({"plan_id": plan_id, "success": False})


def test_concurrent_rewards_all_apply(make_runtime: Callable[..., AgentMemory]) -> None:
    services = two_sessions(make_runtime)
    plan_id = services[0].store(store_input()).plan_id
    n = 24
    run_all([lambda i=i: services[i % 2].reward(failure(plan_id)) for i in range(n)])
    plan = services[1].get(plan_id)
    assert plan["rewards"] == n
    assert plan["failures"] == n
    assert plan["score"] == ema_of_failures(n)
    assert plan["stale"] is True


def test_a_concurrent_store_never_overwrites_a_reward(make_runtime: Callable[..., AgentMemory]) -> None:
    services = two_sessions(make_runtime)
    plan_id = services[0].store(store_input()).plan_id
    rewards, stores, lookups = 20, 10, 20
    jobs: list[Callable[[], Any]] = (
        [lambda i=i: ("reward", services[i % 2].reward(failure(plan_id))) for i in range(rewards)]
        + [lambda i=i: ("store", services[i % 2].store(store_input())) for i in range(stores)]
        + [lambda i=i: ("lookup", services[i % 2].lookup(PlanLookupInput(prompt=PROMPT))) for i in range(lookups)]
    )
    jobs = jobs[::3] + jobs[1::3] + jobs[2::3]  # interleave the kinds
    results = run_all(jobs)
    hits = sum(1 for kind, out in results if kind == "lookup" and out.hit is not None)
    plan = services[0].get(plan_id)
    assert plan["rewards"] == rewards
    assert plan["uses"] == hits
    # Serialisable: the score is that of the rewards after the last store, k of them.
    assert plan["score"] in {ema_of_failures(k) for k in range(rewards + 1)}
    assert plan["stale"] == (plan["score"] < 0.2)


def test_concurrent_stores_and_lookups_of_many_prompts(make_runtime: Callable[..., AgentMemory]) -> None:
    services = two_sessions(make_runtime)
    prompts = [f"Set the volume of channel {n} to {n * 3} percent" for n in range(16)]
    stored = run_all([lambda i=i, p=p: services[i % 2].store(store_input(p)) for i, p in enumerate(prompts)])
    found = run_all([lambda i=i, p=p: services[i % 2].lookup(PlanLookupInput(prompt=p)) for i, p in enumerate(prompts)])
    assert services[0].count() == len(prompts)
    assert [f.hit["plan_id"] if f.hit else None for f in found] == [s.plan_id for s in stored]
