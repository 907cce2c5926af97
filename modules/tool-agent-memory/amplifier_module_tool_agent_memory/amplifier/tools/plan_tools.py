"""plan_* tools: the plan cache (replay tool sequences that solved the same request)."""

from __future__ import annotations

from ...plans.models import PlanLookupInput, PlanRewardInput, PlanStoreInput
from ...runtime import AgentMemory
from .base import AgentMemoryTool, Outcome


def _store(rt: AgentMemory, args: PlanStoreInput) -> Outcome:
    outcome = rt.plans().store(args)
    return Outcome(outcome.as_output(), outcome.event_fields())


def _lookup(rt: AgentMemory, args: PlanLookupInput) -> Outcome:
    outcome = rt.plans().lookup(args)
    return Outcome(outcome.as_output(), outcome.event_fields(), event_name=outcome.event)


def _reward(rt: AgentMemory, args: PlanRewardInput) -> Outcome:
    outcome = rt.plans().reward(args)
    extra = [("plan:stale", {**outcome.event_fields(), "reason": outcome.stale_reason})] if outcome.became_stale else []
    return Outcome(outcome.as_output(), outcome.event_fields(), extra_events=extra)


def plan_tools(rt: AgentMemory) -> list[AgentMemoryTool]:
    """The plan_* tools bound to ``rt``."""
    return [
        AgentMemoryTool(
            rt, "plan_lookup",
            "Before planning a task, look for a cached tool sequence that solved the same request. "
            "answer 'hit': replay the returned actions. answer 'candidate': a stored request looks alike but "
            "may differ (see its prompt and differences): confirm it asks for the same thing before replaying "
            "its actions. answer 'miss': plan from scratch (the nearest cached requests and why they differ "
            "are listed).",
            PlanLookupInput, _lookup, "plan:miss",
        ),
        AgentMemoryTool(
            rt, "plan_store",
            "Cache the tool sequence ({tool, args} steps) that solved a request, for replay next time.",
            PlanStoreInput, _store, "plan:stored",
        ),
        AgentMemoryTool(
            rt, "plan_reward",
            "After replaying a cached plan, report whether it worked (by plan_id or prompt). "
            "Failures make the plan stale so it is not replayed again.",
            PlanRewardInput, _reward, "plan:reward",
        ),
    ]
