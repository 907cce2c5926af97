"""``agent-memory``: look after an identity's memory from the shell.

The commands work on the services directly (through :class:`AgentMemory`), not through
the tool layer; only ``demo`` drives the tools, as an agent would. This is the user
interface, so it prints; the library underneath only logs.

Exit codes: 0 success; 1 the operation failed (not found, store in use, model mismatch,
embedding failure, ...); 2 the command was wrong (usage, invalid identity, invalid input
or config, a bad import file).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from ..config import DEFAULT_STORAGE_ROOT, ROOT_ENV
from ..errors import AgentMemoryError, ConfigError, IdentityError, InvalidInput
from ..identity import DEFAULT_IDENTITY, IDENTITY_ENV, validate_identity
from ..redaction import redact_text
from ..validation import describe_validation_error
from .config_file import CliError
from .mcp import register as register_mcp
from .plans import register as register_plans
from .settings import build_config, open_runtime, read_store_meta, resolve_cli_identity
from .ui import register as register_ui

if TYPE_CHECKING:
    from ..runtime import AgentMemory

PROG = "agent-memory"
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
# Errors that mean "the command was wrong" rather than "the operation failed".
_USAGE_ERRORS: tuple[type[AgentMemoryError], ...] = (IdentityError, InvalidInput, ConfigError)

Handler = Callable[[argparse.Namespace], int]


def _validate(model: type[BaseModel], data: dict[str, Any]) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InvalidInput(describe_validation_error(exc)) from exc


def _print_json(data: Any, out: IO[str] | None = None) -> None:
    print(json.dumps(data, ensure_ascii=False, default=str), file=out or sys.stdout)


def _text_arg(words: Sequence[str], what: str) -> str:
    """Words joined by spaces; a lone ``-`` reads standard input."""
    if list(words) == ["-"]:
        text = sys.stdin.read()
        if not text.strip():
            raise InvalidInput(f"{what} read from standard input is empty")
        return text.rstrip("\n")
    return " ".join(words)


def _one_line(text: str, width: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _tags_suffix(tags: Sequence[str]) -> str:
    return f"  #{' #'.join(tags)}" if tags else ""


def cmd_store(args: argparse.Namespace) -> int:
    from ..memory.models import MemoryStoreInput

    data: dict[str, Any] = {"content": _text_arg(args.content, "content"), "kind": args.kind}
    if args.tag:
        data["tags"] = args.tag
    if args.file:
        data["files"] = args.file
    if args.importance is not None:
        data["importance"] = args.importance
    inp = _validate(MemoryStoreInput, data)
    with open_runtime(args) as rt:
        outcome = rt.memory().store(inp)
        result = {**outcome.as_output(), "identity": rt.identity_name}
    if args.json:
        _print_json(result)
        return EXIT_OK
    if outcome.created:
        print(f"stored {outcome.id} ({inp.kind}) for identity {result['identity']}")
    elif outcome.duplicate:
        print(f"already stored: exact duplicate of {outcome.id}; nothing written")
    else:
        print(f"near-duplicate of {outcome.id} (similarity {result['similarity']}): refreshed it instead of adding")
    for field, patterns in (outcome.redacted or {}).items():
        print(f"redacted from {field}: {', '.join(patterns)}")
    return EXIT_OK


def cmd_search(args: argparse.Namespace) -> int:
    from ..memory.models import MemorySearchInput

    data: dict[str, Any] = {"query": _text_arg(args.query, "query"), "limit": args.limit}
    for key in ("kind", "since", "until"):
        if getattr(args, key) is not None:
            data[key] = getattr(args, key)
    if args.tag:
        data["tags"] = args.tag
    if args.file:
        data["files"] = args.file
    inp = _validate(MemorySearchInput, data)
    with open_runtime(args) as rt:
        results = rt.memory().search(inp)
        identity = rt.identity_name
    if args.json:
        _print_json({"query": inp.query, "results": results, "count": len(results), "identity": identity})
        return EXIT_OK
    if not results:
        print(f"no memories match {inp.query!r} for identity {identity}")
        return EXIT_OK
    for rank, hit in enumerate(results, 1):
        print(f"{rank}. [{hit['score']:.3f}] ({hit['kind']}) {hit['content']}")
        print(f"   id {hit['id']}  created {hit['created_at']}{_tags_suffix(hit['tags'])}")
    return EXIT_OK


def cmd_list(args: argparse.Namespace) -> int:
    from ..memory.models import MemoryListInput

    data: dict[str, Any] = {"limit": args.limit}
    if args.kind is not None:
        data["kind"] = args.kind
    if args.before is not None:
        data["before"] = args.before
    inp = _validate(MemoryListInput, data)
    with open_runtime(args) as rt:
        page = rt.memory().list(inp)
        identity = rt.identity_name
    if args.json:
        _print_json({**page, "identity": identity})
        return EXIT_OK
    if not page["memories"]:
        print(f"no memories for identity {identity}")
        return EXIT_OK
    for mem in page["memories"]:
        summary = f"({mem['kind']}) {_one_line(mem['content'])}{_tags_suffix(mem['tags'])}"
        print(f"{mem['created_at']}  {mem['id']}  {summary}")
    if page["next_before"]:
        print(f"more: agent-memory list --before {page['next_before']}")
    return EXIT_OK


def cmd_forget(args: argparse.Namespace) -> int:
    from ..errors import NotFound
    from ..memory.models import MemoryIdInput

    ids = [_validate(MemoryIdInput, {"id": raw}).id for raw in args.ids]
    deleted: list[dict[str, Any]] = []
    missing: list[str] = []
    with open_runtime(args) as rt:
        for memory_id in ids:
            try:
                deleted.append(rt.memory().forget(memory_id))
            except NotFound:
                missing.append(memory_id)
        identity = rt.identity_name
    if args.json:
        _print_json({"deleted": deleted, "not_found": missing, "identity": identity})
    else:
        for mem in deleted:
            print(f"forgot {mem['id']} ({mem['kind']}) {_one_line(mem['content'])}")
    if missing:
        print(f"{PROG}: no memory with id {', '.join(missing)} for identity {identity}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def _feature_counts(rt: AgentMemory, path: Path | None) -> dict[str, dict[str, int]]:
    """Counts of the plan cache and the working-memory cache.

    On the embedded backend a feature's collection is opened only if its folder exists, so
    ``inspect`` never creates one (``path`` is None on a server, where that cannot be seen).
    """
    plans = {"total": 0, "fresh": 0, "stale": 0}
    if path is None or (path / "plans").is_dir():
        service = rt.plans()
        total, stale = service.count(), service.count(stale=True)
        plans = {"total": total, "fresh": total - stale, "stale": stale}
    cache = {"items": 0, "expired": 0, "blocks": 0}
    if path is None or (path / "cache").is_dir():
        cache = _cache_counts(rt.cache())
    return {"plans": plans, "cache": cache}


def _cache_counts(service: Any) -> dict[str, int]:
    """Items (and how many of them expired, awaiting ``gc``) and blocks of the working-memory cache."""
    from ..store.contract import utc_now
    from ..store.query import Match, Range, all_of, where

    coll = service.coll
    return {
        "items": int(coll.count(where(type="item"))),
        "expired": int(coll.count(all_of(Match("type", "item"), Range("ttl_expires_at", lte=utc_now())))),
        "blocks": int(coll.count(where(type="block"))),
    }


def inspect_store(args: argparse.Namespace) -> dict[str, Any]:
    """What ``inspect`` reports; on the embedded backend it creates nothing for an identity without a store."""
    identity = resolve_cli_identity(getattr(args, "identity", None))
    config = build_config(args, identity.name)
    embedded = config.storage.backend == "edge"
    path = config.resolved_root() / identity.name
    meta = read_store_meta(path) if embedded else None
    report: dict[str, Any] = {
        "identity": identity.name,
        "identity_source": identity.source,
        "backend": config.storage.backend,
        "path": str(path),
        "exists": meta is not None,
        "embedding_model": meta.get("model_id") if meta else None,
        "dim": meta.get("dim") if meta else None,
        "created_at": meta.get("created_at") if meta else None,
        "memories": {"total": 0, "by_kind": {}},
        "disk_bytes": 0,
    }
    if embedded and meta is None:
        return report
    with open_runtime(args) as rt:
        store = rt.store()
        by_kind = rt.memory().counts_by_kind()
        report["memories"] = {"total": sum(by_kind.values()), "by_kind": by_kind}
        report.update(_feature_counts(rt, path if embedded else None))
        if embedded:
            report["disk_bytes"] = store.disk_bytes()
            report["journal"] = getattr(store, "journal_status", dict)()
        else:
            # A server's disk use is the server's business: not measurable from here.
            report.update(path=str(store.path), exists=True, embedding_model=store.model_id, dim=store.dim)
            report["disk_bytes"] = None
    return report


def _human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def cmd_inspect(args: argparse.Namespace) -> int:
    report = inspect_store(args)
    if args.json:
        _print_json(report)
        return EXIT_OK
    print(f"identity   {report['identity']} (from {report['identity_source']})")
    print(f"path       {report['path']}")
    if not report["exists"]:
        print("store      none yet (it is created by the first memory stored or imported)")
        return EXIT_OK
    print(f"model      {report['embedding_model']} (dim {report['dim']})")
    kinds = ", ".join(f"{k} {v}" for k, v in report["memories"]["by_kind"].items() if v) or "none"
    print(f"memories   {report['memories']['total']} ({kinds})")
    for feature in ("cache", "plans"):
        if feature in report:
            print(f"{feature:<10} " + ", ".join(f"{k} {v}" for k, v in report[feature].items()))
    if report["disk_bytes"] is not None:
        print(f"disk       {_human_bytes(report['disk_bytes'])}")
    for name, journal in report.get("journal", {}).items():
        damaged = f", {journal['damaged_records']} damaged records" if journal["damaged_records"] else ""
        print(
            f"journal    {name}: {journal['points']} points, last change #{journal['last_change']}, "
            f"{_human_bytes(journal['bytes'])}{damaged}"
        )
    return EXIT_OK


def check_output_path(path: str) -> Path:
    """``--out`` must be a regular file (replaced) or a new path in an existing folder; anything else
    (a folder, a device, a FIFO, a socket, a symbolic link) is refused before any work is done."""
    target = Path(path).expanduser()
    try:
        st = target.lstat()
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise CliError(f"cannot use --out {target}: {exc.strerror or exc}") from exc
    if st is not None and stat.S_ISLNK(st.st_mode):
        raise CliError(f"--out {target} is a symbolic link; give the file itself or a new path")
    if st is not None and not stat.S_ISREG(st.st_mode):
        what = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise CliError(f"--out {target} is {what}; give a regular file (it is replaced) or a new path")
    if not target.parent.is_dir():
        raise CliError(f"--out {target}: the folder {target.parent} does not exist")
    return target


@contextmanager
def _output_stream(path: str | None) -> Iterator[IO[str]]:
    """stdout, or a file written in full before it replaces ``path`` (no half-written export)."""
    if not path or path == "-":
        yield sys.stdout
        return
    target = check_output_path(path)
    try:
        # A fresh private name (O_EXCL): never writes through a planted link, never shared with another run.
        fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".partial")
    except OSError as exc:
        raise CliError(f"cannot write {target}: {exc.strerror or exc}") from exc
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            yield fh
        check_output_path(path)  # still a regular file or absent: nothing swapped in meanwhile
        if target.exists():
            tmp.chmod(stat.S_IMODE(target.stat().st_mode))  # a replaced file keeps its mode; a new one is 0600
        tmp.replace(target)
    except OSError as exc:
        raise CliError(f"cannot write {target}: {exc.strerror or exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)


def cmd_export(args: argparse.Namespace) -> int:
    from ..maintenance.transfer import export_lines, export_plans, journal_memory_service
    from .progress import Progress, wanted

    count = 0
    if args.out and args.out != "-":
        check_output_path(args.out)  # refuse a bad --out before opening the store
    # Whatever model wrote the store: export is the way out of a model change (export, move, import).
    with open_runtime(args, adopt_recorded_model=True) as rt, _output_stream(args.out) as out:
        identity = rt.identity_name
        # Progress only when the memories go to a file: on a terminal they are the output.
        progress = Progress("exported", enabled=wanted(args.json) and bool(args.out) and args.out != "-")

        def set_total(total: int) -> None:
            progress.total = total

        lines = export_lines(
            rt.memory,
            lambda: journal_memory_service(rt.store(), rt.embedder(), rt.config.memory),
            lambda message: print(f"{PROG}: warning: {message}", file=sys.stderr),
            model_id=rt.store().model_id if args.with_vectors else None,
            set_total=set_total,
        )
        for line in lines:
            out.write(line + "\n")
            count += 1
            progress.advance()
        plans = 0
        for line in export_plans(rt.plans()):
            out.write(line + "\n")
            plans += 1
        progress.finish()
    if args.out and args.out != "-":
        summary = {"exported": count, "plans": plans, "path": str(Path(args.out).expanduser()), "identity": identity}
        if args.json:
            _print_json(summary)
        else:
            print(f"exported {count} memories and {plans} plans of identity {identity} to {summary['path']}")
    return EXIT_OK


def _warn(message: str) -> None:
    print(f"{PROG}: warning: {message}", file=sys.stderr)


def cmd_reindex(args: argparse.Namespace) -> int:
    """Re-embed an identity's memories and plans with the configured model, into a fresh store."""
    from ..maintenance.reindex import reindex
    from .progress import Progress, wanted

    identity = resolve_cli_identity(getattr(args, "identity", None))
    config = build_config(args, identity.name)
    result = reindex(config, identity, Progress("reindexed", enabled=wanted(args.json)), _warn)
    if args.json:
        _print_json(result)
    else:
        print(
            f"reindexed {result['memories']} memories and {result['plans']} plans of identity {identity.name}: "
            f"{result['from_model']} -> {result['to_model']} (the working-memory cache starts empty)"
        )
    return EXIT_OK


def cmd_repair(args: argparse.Namespace) -> int:
    from ..maintenance.repair import repair
    from .progress import Progress, wanted

    identity = resolve_cli_identity(getattr(args, "identity", None))
    config = build_config(args, identity.name)
    results = repair(config, identity.name, lambda name: Progress(f"repair {name}: changes", enabled=wanted(args.json)))
    if args.json:
        _print_json({"identity": identity.name, "collections": results})
    else:
        for r in results:
            if r["rebuilt"]:
                skipped = r["damaged_journal_records"]
                note = f" ({skipped} damaged journal records skipped)" if skipped else ""
                print(
                    f"{r['collection']}: rebuilt {r['points']} points from {r['changes_replayed']} journal changes "
                    f"in {r['seconds']} s{note}"
                )
            else:
                print(f"{r['collection']}: nothing to rebuild ({r['reason']})")
    return EXIT_OK


def cmd_import(args: argparse.Namespace) -> int:
    from ..maintenance.import_pipeline import write_memories
    from ..maintenance.transfer import PlanWriter, check_import, check_vectors, import_checked, memory_writer
    from .progress import Progress, wanted

    show = wanted(args.json)
    checking = Progress("checked", enabled=show)
    checked = check_import(args.file, checking.advance)
    checking.finish()
    try:
        source = checked.source
        repeated = checked.repeated
        result: dict[str, Any] = {"read": checked.read, "repeated_ids": repeated, "dry_run": args.dry_run, "plans": 0}
        models = sorted({model for model, _ in checked.vector_models})
        if models:
            result["vectors"] = {"models": models, "used": False}
        if args.dry_run:
            result["imported"] = 0
            result["identity"] = resolve_cli_identity(getattr(args, "identity", None)).name
        else:
            with open_runtime(args) as rt:
                use_vectors = bool(models) and not args.reembed
                if use_vectors:
                    check_vectors(checked, rt.embedder().model_id, rt.embedder().dim)
                    result["vectors"]["used"] = True
                progress = Progress("imported", total=checked.to_write, enabled=show)
                try:
                    result.update(
                        import_checked(
                            checked,
                            {"memory": memory_writer(rt.memory()), "plan": lambda: PlanWriter(rt.plans())},
                            use_vectors=use_vectors,
                            batch=rt.config.embeddings.batch_size,
                            advance=progress.advance,
                            memories_first=write_memories,
                        )
                    )
                finally:
                    progress.finish()
                result["identity"] = rt.identity_name
    finally:
        checked.close()
    if args.json:
        _print_json(result)
    elif args.dry_run:
        counts = checked.counts
        print(
            f"{source}: {counts.get('memory', 0)} valid memories and {counts.get('plan', 0)} plans; "
            "nothing written (--dry-run)"
        )
    else:
        note = f" ({repeated} repeated ids: the last line of each won)" if repeated else ""
        how = " (with their vectors: nothing embedded)" if result.get("vectors", {}).get("used") else ""
        print(
            f"imported {result['imported']} memories and {result['plans']} plans into identity "
            f"{result['identity']}{how}{note}"
        )
    return EXIT_OK


def cmd_gc(args: argparse.Namespace) -> int:
    from ..maintenance.gc import collect_garbage

    identity = resolve_cli_identity(getattr(args, "identity", None))
    result = collect_garbage(build_config(args, identity.name), identity, limit=args.limit)
    if args.json:
        _print_json(result)
    else:
        print(f"removed {result['removed']} expired working-memory items of identity {identity.name}")
        for purge in result["purges"]:
            if "seconds" not in purge:
                print(f"{purge['collection']}: not purged ({purge['reason']}; `agent-memory repair` adds it)")
            elif purge["purged"]:
                print(f"{purge['collection']}: purged deleted points from the engine's files in {purge['seconds']} s")
            else:
                print(f"{purge['collection']}: nothing to purge (checked in {purge['seconds']} s)")
    return EXIT_OK


def cmd_delete_identity(args: argparse.Namespace) -> int:
    from ..maintenance.identity import delete_identity

    identity = resolve_cli_identity(getattr(args, "identity", None))
    result = delete_identity(build_config(args, identity.name), identity.name, args.confirm)
    if args.json:
        _print_json(result)
    elif result["backend"] == "server":
        names = ", ".join(result["collections"]) or "none"
        print(f"deleted identity {identity.name}: its server collections {names}")
    else:
        print(f"deleted identity {identity.name}: {result['path']} ({_human_bytes(result['bytes'])})")
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    identity = validate_identity(args.identity) if args.identity is not None else "demo"
    return run_demo(root=args.root, identity=identity, as_json=args.json, config_path=args.config)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _common_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("common options")
    group.add_argument(
        "--identity",
        default=argparse.SUPPRESS,
        help=f"whose memory (default ${IDENTITY_ENV}, else '{DEFAULT_IDENTITY}')",
    )
    group.add_argument(
        "--root",
        default=argparse.SUPPRESS,
        help=f"storage root (default ${ROOT_ENV}, else {DEFAULT_STORAGE_ROOT})",
    )
    group.add_argument(
        "--config",
        default=argparse.SUPPRESS,
        metavar="FILE",
        help="the module's config block (YAML or JSON), e.g. to choose the embedding model",
    )
    group.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")
    group.add_argument(
        "-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="log progress and tracebacks"
    )
    return common


def build_parser() -> argparse.ArgumentParser:
    """The ``agent-memory`` argument parser."""
    from ..memory.models import MAX_SEARCH_LIMIT, MEMORY_KINDS

    common = _common_options()
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Long-term memory of Amplifier agents: one private embedded store per identity.",
        parents=[common],
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def add(name: str, handler: Handler, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, parents=[common], help=help_text, description=help_text)
        p.set_defaults(handler=handler)
        return p

    p = add("demo", cmd_demo, "run the tools in a real Amplifier session on a temporary store (offline)")
    p.epilog = "The demo uses identity 'demo' and a temporary root unless --identity/--root are given."

    p = add("store", cmd_store, "store one memory")
    p.add_argument("content", nargs="+", help="what to remember ('-' reads standard input)")
    p.add_argument("--kind", choices=MEMORY_KINDS, default="note")
    p.add_argument("--tag", action="append", metavar="TAG", help="a tag (repeatable)")
    p.add_argument("--file", action="append", metavar="PATH", help="a related file path (repeatable)")
    p.add_argument("--importance", type=float, help="0..1 (default 0.5)")

    p = add("search", cmd_search, "search memories by meaning and keywords")
    p.add_argument("query", nargs="+", help="what to look for ('-' reads standard input)")
    p.add_argument("--limit", type=int, default=5, help=f"results (default 5, at most {MAX_SEARCH_LIMIT})")
    p.add_argument("--kind", choices=MEMORY_KINDS)
    p.add_argument("--tag", action="append", metavar="TAG", help="only memories with any of these tags")
    p.add_argument("--file", action="append", metavar="PATH", help="only memories about these files")
    p.add_argument("--since", metavar="ISO", help="created at or after (e.g. 2026-01-31)")
    p.add_argument("--until", metavar="ISO", help="created at or before")

    p = add("list", cmd_list, "list memories, newest first")
    p.add_argument("--limit", type=int, default=20, help="memories per page (1-100, default 20)")
    p.add_argument("--kind", choices=MEMORY_KINDS)
    p.add_argument("--before", metavar="ISO", help="only memories created before this time (paging)")

    p = add("forget", cmd_forget, "delete memories by id")
    p.add_argument("ids", nargs="+", metavar="ID")

    add("inspect", cmd_inspect, "show the store: path, model, counts by kind, disk use")

    p = add("export", cmd_export, "write every memory as JSON lines")
    p.add_argument("--out", metavar="FILE", help="write to FILE (default standard output)")
    p.add_argument(
        "--with-vectors",
        action="store_true",
        help="add each memory's vectors and the model id (an import into a store of that model embeds nothing)",
    )

    p = add("import", cmd_import, "import JSON lines written by export (all lines are checked first)")
    p.add_argument("file", metavar="FILE", help="JSONL file ('-' reads standard input)")
    p.add_argument("--dry-run", action="store_true", help="validate only; write nothing")
    p.add_argument(
        "--reembed", action="store_true", help="embed every memory, ignoring vectors the file carries"
    )

    add("repair", cmd_repair, "rebuild the store's engine files from its journal (after damage)")
    add("reindex", cmd_reindex, "re-embed memories and plans with the model of --config (or the store's own)")

    p = add(
        "gc",
        cmd_gc,
        "remove expired working-memory cache items (and closed blocks left empty), then purge deleted points' "
        "text from the engine's files now (a purge waiting for an idle collection, or left by a crash)",
    )
    p.add_argument("--limit", type=_positive_int, metavar="N", help="remove at most N items (default all)")

    p = add("delete-identity", cmd_delete_identity, "delete the identity's whole store for good (after --confirm)")
    p.add_argument("--confirm", metavar="IDENTITY", help="the identity's name again: nothing is deleted without it")
    register_mcp(add)
    register_plans(add)
    register_ui(add)
    return parser


def _configure_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


def _report_error(message: str, kind: str, as_json: bool) -> None:
    if as_json:
        _print_json({"error": {"message": message, "type": kind}}, out=sys.stderr)
    else:
        print(f"{PROG}: error: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return the exit code (the console script exits with it)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else (EXIT_OK if exc.code is None else EXIT_USAGE)
    for name, default in (("identity", None), ("root", None), ("config", None), ("json", False), ("verbose", False)):
        if not hasattr(args, name):
            setattr(args, name, default)
    _configure_logging(args.verbose)
    handler: Handler = args.handler
    try:
        return handler(args)
    except AgentMemoryError as exc:
        _report_error(str(exc), exc.kind, args.json)
        return EXIT_USAGE if isinstance(exc, (*_USAGE_ERRORS, CliError)) else EXIT_FAILED
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `agent-memory export | head`: the reader left; not an error of ours.
        sys.stderr.close()
        return EXIT_OK
    except OSError as exc:
        # The file system said no (a path that is a file, no permission, disk full, ...): say what and where.
        where = f" ({exc.filename})" if exc.filename else ""
        _report_error(f"{exc.strerror or type(exc).__name__}{where}", "os_error", args.json)
        return EXIT_FAILED
    except Exception as exc:
        if args.verbose:
            logging.getLogger(__name__).exception("unexpected failure")
        _report_error(
            f"unexpected {type(exc).__name__}: {redact_text(str(exc))[:300]} (this is a bug; --verbose shows the "
            "traceback)",
            "internal_error",
            args.json,
        )
        return EXIT_FAILED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
