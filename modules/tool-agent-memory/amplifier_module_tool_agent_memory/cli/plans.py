"""``agent-memory plans list|show|forget``: see the cached plans and delete a bad one (issue 16).

The CLI face of ``plan_list``, ``plan_get`` and ``plan_forget``: validate, call the plan service, print
(text, or one JSON object with ``--json``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ValidationError

from ..errors import InvalidInput, NotFound
from ..validation import describe_validation_error
from .settings import open_runtime

EXIT_OK = 0
EXIT_FAILED = 1


def _validate(model: type[BaseModel], data: dict[str, Any]) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InvalidInput(describe_validation_error(exc)) from exc


def _one_line(text: str, width: int = 90) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def cmd_plans(args: argparse.Namespace) -> int:
    """Run ``plans list``, ``plans show ID`` or ``plans forget ID...``."""
    from ..plans.models import PlanIdInput, PlanListInput

    if args.action == "list":
        if args.ids:
            raise InvalidInput("plans list takes no plan ids")
        data: dict[str, Any] = {"limit": args.limit, "offset": args.offset}
        if args.contains:
            data["contains"] = args.contains
        if args.stale is not None:
            data["stale"] = args.stale
        inp = _validate(PlanListInput, data)
        with open_runtime(args) as rt:
            page = rt.plans().list_plans(inp)
            identity = rt.identity_name
        if args.json:
            print(json.dumps({**page, "identity": identity}, ensure_ascii=False, default=str))
            return EXIT_OK
        if not page["plans"]:
            print(f"no plans for identity {identity}")
        for plan in page["plans"]:
            stale = " stale" if plan["stale"] else ""
            print(f"{plan['plan_id']}  {plan['steps']} steps  score {plan['score']:.2f}  uses {plan['uses']}{stale}  "
                  f"{_one_line(plan['prompt'])}")
        if page["total"] > inp.offset + len(page["plans"]):
            print(f"more: agent-memory plans list --offset {inp.offset + len(page['plans'])}")
        return EXIT_OK
    if not args.ids:
        raise InvalidInput(f"plans {args.action} needs at least one plan id")
    ids = [_validate(PlanIdInput, {"plan_id": raw}).plan_id for raw in args.ids]
    found: list[dict[str, Any]] = []
    missing: list[str] = []
    with open_runtime(args) as rt:
        for plan_id in ids:
            try:
                found.append(rt.plans().get(plan_id) if args.action == "show" else rt.plans().forget(plan_id))
            except NotFound:
                missing.append(plan_id)
        identity = rt.identity_name
    key = "plans" if args.action == "show" else "forgotten"
    if args.json:
        print(json.dumps({key: found, "not_found": missing, "identity": identity}, ensure_ascii=False, default=str))
    else:
        for plan in found:
            if args.action == "show":
                print(json.dumps(plan, ensure_ascii=False, indent=2, default=str))
            else:
                print(f"forgot {plan['plan_id']} {_one_line(plan.get('prompt') or '')}")
    for plan_id in missing:
        print(f"no plan with id {plan_id} for identity {identity}", file=sys.stderr)
    return EXIT_FAILED if missing else EXIT_OK


def register(add: Callable[[str, Callable[[argparse.Namespace], int], str], argparse.ArgumentParser]) -> None:
    """Add the ``plans`` command through the CLI's ``add(name, handler, help)``."""
    p = add("plans", cmd_plans, "list, show or forget cached plans (plan_list, plan_get, plan_forget)")
    p.add_argument("action", choices=("list", "show", "forget"))
    p.add_argument("ids", nargs="*", metavar="PLAN_ID", help="plan ids (show, forget)")
    p.add_argument("--contains", help="list: only prompts containing this text")
    p.add_argument("--limit", type=int, default=20, help="list: plans per page (default 20)")
    p.add_argument("--offset", type=int, default=0, help="list: plans to skip")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--stale", dest="stale", action="store_true", default=None, help="list: only stale plans")
    group.add_argument("--fresh", dest="stale", action="store_false", help="list: only fresh plans")
