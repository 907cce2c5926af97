"""The package's shape: parts by capability, no import cycles, amplifier-core only in the glue.

Every import counts, also those inside functions and under ``TYPE_CHECKING``: a lazy import
is still a dependency, and a cycle through one is still two parts that know each other.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import amplifier_module_tool_agent_memory as agent_memory

PKG = agent_memory.__name__
PKG_DIR = Path(agent_memory.__file__).parent
SERVICES = ("memory", "cache", "plans", "store", "embeddings", "compare")
HEAVY = ("qdrant_client", "qdrant_edge", "fastembed", "openai", "onnx", "onnxruntime", "numpy", "mcp")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG_DIR).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([PKG, *parts])


def _imports(path: Path) -> set[str]:
    """Absolute names of everything ``path`` imports (a ``from x import y`` counts y when it is a module)."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return found


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PKG_DIR.rglob("*.py")}
    return {name: {dep for dep in _imports(path) if dep in modules and dep != name} for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for dep in sorted(graph[node]):
            if dep not in index:
                visit(dep)
                low[node] = min(low[node], low[dep])
            elif dep in on_stack:
                low[node] = min(low[node], index[dep])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _non_package_edges(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph without the edges from a module to its own enclosing packages (``from . import x``)."""
    return {name: {dep for dep in deps if not name.startswith(dep + ".")} for name, deps in graph.items()}


def test_the_package_has_no_import_cycles() -> None:
    assert _cycles(_non_package_edges(_graph())) == []


def test_the_cycle_check_finds_a_cycle_when_there_is_one() -> None:
    graph = _graph()
    graph[f"{PKG}.runtime"].add(f"{PKG}.tools.call")  # the tool call imports the runtime: a cycle
    assert _cycles(_non_package_edges(graph))


def test_services_never_import_the_runtime_the_glue_or_the_cli() -> None:
    forbidden = (f"{PKG}.runtime", f"{PKG}.amplifier", f"{PKG}.cli")
    offenders = {
        name: sorted(dep for dep in deps if dep.startswith(forbidden))
        for name, deps in _graph().items()
        if name.split(".")[1:2] and name.split(".")[1] in SERVICES
    }
    assert {name: deps for name, deps in offenders.items() if deps} == {}


def test_only_the_amplifier_glue_and_the_demo_host_import_amplifier_core() -> None:
    # The demo is itself an Amplifier host (it starts a real AmplifierSession), so it imports the core too.
    allowed = (f"{PKG}.amplifier", f"{PKG}.cli.demo")
    importers = sorted(
        _module_name(path)
        for path in PKG_DIR.rglob("*.py")
        if any(dep.split(".")[0] == "amplifier_core" for dep in _imports(path))
    )
    assert importers
    assert [name for name in importers if not name.startswith(allowed)] == []


def test_only_the_mcp_face_and_its_command_import_the_mcp_sdk() -> None:
    # The SDK is an optional extra: nothing an Amplifier install runs may need it.
    allowed = (f"{PKG}.mcp_server", f"{PKG}.cli.mcp")
    importers = sorted(
        _module_name(path)
        for path in PKG_DIR.rglob("*.py")
        if any(dep.split(".")[0] == "mcp" for dep in _imports(path))
    )
    assert importers
    assert [name for name in importers if not name.startswith(allowed)] == []


def test_the_tool_table_knows_no_host() -> None:
    hosts = ("amplifier_core", "mcp", f"{PKG}.amplifier", f"{PKG}.mcp_server", f"{PKG}.cli")
    offenders = {
        _module_name(path): sorted(d for d in _imports(path) if d.split(".")[0] in hosts[:2] or d.startswith(hosts[2:]))
        for path in (PKG_DIR / "tools").rglob("*.py")
    }
    assert {name: deps for name, deps in offenders.items() if deps} == {}


def test_importing_and_mounting_the_package_loads_no_heavy_library() -> None:
    script = (
        "import asyncio, sys\n"
        "from amplifier_core.testing import MockCoordinator\n"
        "import amplifier_module_tool_agent_memory as m\n"
        "asyncio.run(m.mount(MockCoordinator(), {'agent_identity': 'arch-probe', 'storage_root': sys.argv[1]}))\n"
        f"print(','.join(sorted(n for n in {HEAVY!r} if n in sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(PKG_DIR / "__never_created__")],
        capture_output=True, text=True, check=True, timeout=120,
    )
    assert out.stdout.strip() == ""


ENGINES = ("qdrant_edge", "qdrant_client")


def _engine_mentions(path: Path) -> list[str]:
    """Where ``path`` imports an engine library or names one in code (strings and comments aside)."""
    found = [dep for dep in _imports(path) if dep.split(".")[0] in ENGINES]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Name) and node.id in ENGINES:
            found.append(node.id)
        elif isinstance(node, ast.Attribute) and node.attr in ENGINES:
            found.append(node.attr)
    return sorted(set(found))


def test_no_engine_library_is_imported_or_named_outside_the_store() -> None:
    # The services speak the store's own language (store/query.py); each backend translates it once.
    outside = {
        _module_name(path): mentions
        for path in PKG_DIR.rglob("*.py")
        if path.relative_to(PKG_DIR).parts[0] != "store" and (mentions := _engine_mentions(path))
    }
    assert outside == {}
    assert _engine_mentions(PKG_DIR / "store" / "edge_query.py") == ["qdrant_edge"]  # the check sees an import


REGEX_CALLS = frozenset({"match", "fullmatch", "search", "findall", "finditer", "split", "sub", "subn"})


def _parses_a_repr(source: str) -> list[int]:
    """Lines that run a regular expression over a ``repr()`` (directly, or through a name bound to one)."""
    tree = ast.parse(source)

    def is_repr(node: ast.AST) -> bool:
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "repr"

    from_repr = {
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and is_repr(node.value)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    return sorted(
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in REGEX_CALLS
        and any(is_repr(arg) or (isinstance(arg, ast.Name) and arg.id in from_repr) for arg in node.args)
    )


def test_nothing_parses_a_repr() -> None:
    # The server backend once read a query vector back out of qdrant-edge's repr with a regular expression:
    # a release that changed the repr would have broken it.
    readers = {
        _module_name(path): lines
        for path in PKG_DIR.rglob("*.py")
        if (lines := _parses_a_repr(path.read_text(encoding="utf-8")))
    }
    assert readers == {}


def test_the_repr_check_finds_the_old_shape() -> None:
    old = (
        "def parts(query):\n"
        "    text = repr(query)\n"
        "    match = _NEAREST_REPR.match(text)\n"
        "    return re.search('x', repr(query))\n"
    )
    assert _parses_a_repr(old) == [3, 4]


# ---------------------------------------------------------------------------------------
# Typed records: a stored thing's payload is built only by its record type (issue 17).

# The record modules: each converts one stored thing to and from its payload (restated.py and payload.py
# compute the memory's restated-wording and hash fields for memory/record.py).
RECORD_MODULES = frozenset({
    "memory/record.py", "memory/restated.py", "memory/payload.py", "cache/models.py", "plans/models.py",
})
# Payload fields no tool answer shows: a dict written with one of them as a key is a payload built by hand.
STORED_ONLY_KEYS = frozenset({
    "ctx_text", "content_hash",  # memory
    "ttl_expires_at", "access_count", "summary_lines", "closed_items",  # cache item / block
    "prompt_norm", "last_used_at", "rewarded_at",  # plan
})
WRITES = frozenset({"upsert", "set_payload"})


def _hand_built(node: ast.AST, bound: set[str]) -> bool:
    """A dict written out in place (a display, a comprehension, ``dict(...)``) or a name bound to one."""
    if isinstance(node, ast.Dict | ast.DictComp):
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        return True
    return isinstance(node, ast.Name) and node.id in bound


def _hand_built_payloads(source: str) -> list[int]:
    """Lines that hand the store a payload built by hand: ``set_payload(id, <dict>)``, or a point
    ``(id, vectors, <dict>)`` in a function that calls ``upsert``."""
    found: list[int] = []
    for func in ast.walk(ast.parse(source)):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        bound = {
            target.id
            for node in ast.walk(func)
            if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None
            and _hand_built(node.value, set())
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(target, ast.Name)
        }
        calls = [
            (node.func.attr, node) for node in ast.walk(func)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in WRITES
        ]
        for name, call in calls:
            if name == "set_payload" and len(call.args) == 2 and _hand_built(call.args[1], bound):
                found.append(call.lineno)
        if any(name == "upsert" for name, _ in calls):
            found += [
                node.lineno for node in ast.walk(func)
                if isinstance(node, ast.Tuple) and len(node.elts) == 3 and _hand_built(node.elts[2], bound)
            ]
    return sorted(set(found))


def _stored_only_keys(source: str) -> list[str]:
    """The stored-only payload keys ``source`` writes into a dict display."""
    return sorted({
        key.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Dict)
        for key in node.keys
        if isinstance(key, ast.Constant) and key.value in STORED_ONLY_KEYS
    })


def _outside_records() -> list[Path]:
    return [
        path for path in PKG_DIR.rglob("*.py")
        if path.relative_to(PKG_DIR).as_posix() not in RECORD_MODULES and path.relative_to(PKG_DIR).parts[0] != "store"
    ]


def test_no_payload_is_built_by_hand_outside_the_record_types() -> None:
    # memory/record.py (StoredMemory), cache/models.py (CacheItem, CacheBlock) and plans/models.py (PlanRecord)
    # convert each stored thing to its payload; the services hand the store only what those give them.
    built = {
        _module_name(path): lines
        for path in _outside_records()
        if (lines := _hand_built_payloads(path.read_text(encoding="utf-8")))
    }
    assert built == {}
    keys = {
        _module_name(path): found
        for path in _outside_records()
        if (found := _stored_only_keys(path.read_text(encoding="utf-8")))
    }
    assert keys == {}


def test_the_payload_check_finds_the_old_shapes() -> None:
    old = (
        "def store(self, memory_id, vectors, older, content):\n"
        "    payload = {'content': content, 'ctx_text': content, 'content_hash': 'x'}\n"
        "    self.coll.upsert([(memory_id, vectors, payload)])\n"
        "    self.coll.set_payload(older.id, {SUPERSEDED_BY: memory_id})\n"
        "def flush(self, points, rec, pair):\n"
        "    points.append((rec.id, {DENSE: pair[0]}, {'content': rec.content}))\n"
        "    self.coll.upsert(points)\n"
        "def touch(self, item):\n"
        "    update: dict[str, Any] = {'access_count': item.access_count}\n"
        "    self.coll.set_payload(item.id, update)\n"
        "def fine(self, item, memory):\n"
        "    self.coll.set_payload(item.id, item.payload_of('version'))\n"
        "    self.coll.upsert([(memory.id, {DENSE: memory.vector}, memory.to_payload())])\n"
    )
    assert _hand_built_payloads(old) == [3, 4, 6, 10]
    assert _stored_only_keys(old) == ["access_count", "content_hash", "ctx_text"]


# A stored thing's fields are read through its record type too: ``StoredMemory.from_payload`` / ``MemoryFields``
# (memory/record.py), ``CacheItem`` / ``CacheBlock`` / ``CacheFields`` (cache/models.py), ``PlanRecord`` /
# ``PlanFields`` (plans/models.py). What counts as a stored payload here: a ``.payload`` attribute (a point the
# store returned), ``(x.payload or {})`` / ``dict(x.payload ...)``, a parameter named ``payload``, and a name
# bound in the same function to one of those. An event's payload (a dict the code builds) is none of them.
PAYLOAD_READERS = frozenset({"get", "items", "keys", "values", "pop", "setdefault"})


def _stored_payload(node: ast.AST, bound: set[str]) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr == "payload"
    if isinstance(node, ast.BoolOp):
        return any(_stored_payload(value, bound) for value in node.values)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and node.args:
        return _stored_payload(node.args[0], bound)
    return isinstance(node, ast.Name) and node.id in bound


def _payload_names(func: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    """The names that hold a stored payload in ``func``: a ``payload`` parameter, and names bound to a payload."""
    args = func.args
    bound = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs] if a.arg == "payload"}
    changed = True
    while changed:  # a name bound to a name bound to a payload holds one too
        changed = False
        for node in ast.walk(func):
            if not isinstance(node, ast.Assign | ast.AnnAssign) or node.value is None:
                continue
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                pairs: list[tuple[ast.AST, ast.AST]] = [(target, node.value)]
                if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    pairs = list(zip(target.elts, node.value.elts, strict=False))
                for name, value in pairs:
                    if isinstance(name, ast.Name) and name.id not in bound and _stored_payload(value, bound):
                        bound.add(name.id)
                        changed = True
    return bound


def _payload_reads(source: str) -> list[int]:
    """Lines that read a stored payload's field by name: ``payload.get(...)``, ``payload[...]``, ``k in payload``,
    ``payload.items()`` and the like."""
    found: set[int] = set()
    for func in ast.walk(ast.parse(source)):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        bound = _payload_names(func)
        for node in ast.walk(func):
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
                hit = _stored_payload(node.value, bound)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                hit = node.func.attr in PAYLOAD_READERS and _stored_payload(node.func.value, bound)
            elif isinstance(node, ast.Compare):
                hit = any(
                    isinstance(op, ast.In | ast.NotIn) and _stored_payload(right, bound)
                    for op, right in zip(node.ops, node.comparators, strict=True)
                )
            else:
                continue
            if hit:
                found.add(node.lineno)
    return sorted(found)


def test_no_stored_field_is_read_by_hand_outside_the_record_types() -> None:
    reads = {
        _module_name(path): lines
        for path in _outside_records()
        if (lines := _payload_reads(path.read_text(encoding="utf-8")))
    }
    assert reads == {}


def test_the_read_check_finds_the_old_shapes() -> None:
    old = (
        "def tail(self, records):\n"
        "    payload = dict(records[0].payload or {})\n"
        "    return int(payload['seq']), str(payload.get('content', ''))\n"
        "def newest(member, hits):\n"
        "    if member.payload.get(SUPERSEDED_BY):\n"
        "        return (hits[0].payload or {}).get('kind')\n"
        "def boost(payload, now):\n"
        "    return payload.get('importance')\n"
        "def rerank(points):\n"
        "    for p in points:\n"
        "        payload = p.payload or {}\n"
        "        if 'thread' in payload:\n"
        "            row = payload\n"
        "            return {k: v for k, v in row.items()}\n"
        "def fine(self, records, data):\n"
        "    event = {'identity': self.name, **data}\n"
        "    event['ms'] = 1.0\n"
        "    stored = MemoryFields(records[0].payload or {})\n"
        "    return stored.content, event.get('identity'), [k for k in event.items()]\n"
    )
    assert _payload_reads(old) == [3, 5, 6, 8, 12, 14]
