"""Handlers of the plan_* tools: the plan cache (replay tool sequences that solved the same request)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .spec import Outcome

if TYPE_CHECKING:
    from ..plans.models import PlanIdInput, PlanListInput, PlanLookupInput, PlanRewardInput, PlanStoreInput
    from ..runtime import AgentMemory


def store(rt: AgentMemory, args: PlanStoreInput) -> Outcome:
    outcome = rt.plans().store(args)
    return Outcome(outcome.as_output(), outcome.event_fields())


def lookup(rt: AgentMemory, args: PlanLookupInput) -> Outcome:
    outcome = rt.plans().lookup(args)
    return Outcome(outcome.as_output(), outcome.event_fields(), event_name=outcome.event)


def list_plans(rt: AgentMemory, args: PlanListInput) -> Outcome:
    out = rt.plans().list_plans(args)
    return Outcome(out, {"count": len(out["plans"]), "total": out["total"]})


def get(rt: AgentMemory, args: PlanIdInput) -> Outcome:
    out = rt.plans().get(args.plan_id)
    return Outcome(out, {"plan_id": args.plan_id, "count": 1})


def forget(rt: AgentMemory, args: PlanIdInput) -> Outcome:
    out = rt.plans().forget(args.plan_id)
    return Outcome(out, {"plan_id": args.plan_id, "count": 1})


def reward(rt: AgentMemory, args: PlanRewardInput) -> Outcome:
    outcome = rt.plans().reward(args)
    extra = [("plan:stale", {**outcome.event_fields(), "reason": outcome.stale_reason})] if outcome.became_stale else []
    return Outcome(outcome.as_output(), outcome.event_fields(), extra_events=extra)
