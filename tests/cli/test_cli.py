"""The ``agent-memory`` command line: commands, JSON output, exit codes and one-line errors."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from amplifier_module_tool_agent_memory.cache.models import CacheWriteInput
from amplifier_module_tool_agent_memory.cli.main import main
from amplifier_module_tool_agent_memory.config import parse_config
from amplifier_module_tool_agent_memory.embeddings.providers import LOCAL_MODEL_ID, CachedEmbedder
from amplifier_module_tool_agent_memory.identity import IDENTITY_ENV, ResolvedIdentity
from amplifier_module_tool_agent_memory.memory.models import MemoryStoreInput
from amplifier_module_tool_agent_memory.plans.models import PlanStoreInput
from amplifier_module_tool_agent_memory.runtime import AgentMemory
from amplifier_module_tool_agent_memory.store.contract import utc_now
from amplifier_module_tool_agent_memory.store.edge import LOCK_FILE, STORE_META, open_store_count

Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def cli(root: Path, embedder: CachedEmbedder, capsys: pytest.CaptureFixture[str]) -> Run:
    """Run ``agent-memory`` in-process on the test root; returns (exit code, stdout, stderr)."""

    def run(*argv: str, identity: str | None = "alice") -> tuple[int, str, str]:
        args = [*argv, "--root", str(root)]
        if identity is not None:
            args += ["--identity", identity]
        code = main(args)
        out, err = capsys.readouterr()
        return code, out, err

    return run


def run_json(cli: Run, *argv: str, identity: str | None = "alice") -> Any:
    code, out, err = cli(*argv, "--json", identity=identity)
    assert code == 0, err
    return json.loads(out)


@pytest.fixture
def sample(make_runtime: Callable[..., AgentMemory]) -> list[str]:
    """Three memories stored for alice (through the service, in one store opening); their ids, oldest first."""
    rt = make_runtime("alice")
    ids = [
        rt.memory().store(MemoryStoreInput(content=content, kind=kind, tags=["sample"])).id
        for content, kind in (
            ("We chose PostgreSQL for the billing service", "decision"),
            ("The user prefers tabs over spaces in Go code", "preference"),
            ("The nightly backup runs at 02:00 UTC", "fact"),
        )
    ]
    rt.close()
    return ids


def test_store_then_search_finds_the_memory(cli: Run, sample: list[str]) -> None:
    found = run_json(cli, "search", "which", "database", "does", "billing", "use?")
    assert found["results"][0]["id"] == sample[0]
    assert found["results"][0]["kind"] == "decision"


def test_search_prints_ranked_results_for_a_person(cli: Run, sample: list[str]) -> None:
    code, out, _ = cli("search", "when does the backup run?")
    assert code == 0
    first = out.splitlines()[0]
    assert first.startswith("1. [") and "(fact) The nightly backup runs at 02:00 UTC" in first


def test_store_of_an_exact_duplicate_writes_nothing(cli: Run, sample: list[str]) -> None:
    again = run_json(cli, "store", "we chose   PostgreSQL for the billing service", "--kind", "decision")
    assert again["duplicate"] is True and again["id"] == sample[0]
    assert run_json(cli, "inspect")["memories"]["total"] == 3


def test_store_redacts_secrets_and_says_so(cli: Run) -> None:
    code, out, _ = cli("store", "The deploy token is ghp_0123456789abcdefghijABCDEFGHIJ012345")
    assert code == 0
    assert "redacted from content: github_token" in out
    listed = run_json(cli, "list")
    assert "ghp_" not in listed["memories"][0]["content"]


def test_store_reads_content_from_stdin(cli: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO("Line one of a long note\nline two\n"))
    stored = run_json(cli, "store", "-")
    listed = run_json(cli, "list")
    assert listed["memories"][0]["id"] == stored["id"]
    assert listed["memories"][0]["content"] == "Line one of a long note\nline two"


def test_list_is_newest_first(cli: Run, sample: list[str]) -> None:
    listed = run_json(cli, "list")
    assert [m["id"] for m in listed["memories"]] == list(reversed(sample))


def test_list_pages_with_before(cli: Run, sample: list[str]) -> None:
    first = run_json(cli, "list", "--limit", "2")
    rest = run_json(cli, "list", "--limit", "2", "--before", first["next_before"])
    assert [m["id"] for m in first["memories"] + rest["memories"]] == list(reversed(sample))


def test_forget_deletes_the_memory(cli: Run, sample: list[str]) -> None:
    forgotten = run_json(cli, "forget", sample[1])
    assert [m["id"] for m in forgotten["deleted"]] == [sample[1]]
    assert sample[1] not in [m["id"] for m in run_json(cli, "list")["memories"]]


def test_forget_of_an_unknown_id_exits_1_naming_it(cli: Run, sample: list[str]) -> None:
    unknown = "6f1c1a52-1111-4c2b-9b1e-000000000000"
    code, _, err = cli("forget", unknown)
    assert code == 1
    assert unknown in err and len(err.strip().splitlines()) == 1


def test_inspect_reports_path_model_counts_and_disk_use(cli: Run, root: Path, sample: list[str]) -> None:
    report = run_json(cli, "inspect")
    assert report["identity"] == "alice"
    assert report["path"] == str(root / "alice")
    assert report["embedding_model"] == LOCAL_MODEL_ID and report["dim"] == 384
    assert report["memories"] == {
        "total": 3,
        "by_kind": {"fact": 1, "decision": 1, "note": 0, "preference": 1, "event": 0},
    }
    assert 0 < report["disk_bytes"] < 50 * 1024 * 1024


def test_inspect_of_an_identity_without_a_store_creates_nothing(cli: Run, root: Path) -> None:
    report = run_json(cli, "inspect", identity="nobody")
    assert report["exists"] is False and report["memories"]["total"] == 0
    assert not (root / "nobody").exists()


def test_inspect_counts_plans_and_cache_items(
    cli: Run, root: Path, make_runtime: Callable[..., AgentMemory], sample: list[str]
) -> None:
    rt = make_runtime("alice")
    rt.plans().store(PlanStoreInput(prompt="Deploy the API", actions=[{"tool": "bash", "args": {"command": "make"}}]))
    rt.cache().write(CacheWriteInput(kind="fact", content="The API listens on port 8080"))
    rt.close()
    report = run_json(cli, "inspect")
    assert report["plans"] == {"total": 1, "fresh": 1, "stale": 0}
    assert report["cache"]["items"] == 1 and report["cache"]["expired"] == 0 and report["cache"]["blocks"] >= 1


def test_gc_removes_expired_cache_items(cli: Run, root: Path, embedder: CachedEmbedder) -> None:
    an_hour_ago = utc_now() - timedelta(hours=1)
    rt = AgentMemory(
        parse_config({"storage_root": str(root)}), ResolvedIdentity("alice", "config"), clock=lambda: an_hour_ago
    )
    rt.cache().write(CacheWriteInput(kind="fact", content="Scratch note that expires", ttl_minutes=1))
    rt.cache().write(CacheWriteInput(kind="fact", content="The build uses Bazel 7", ttl_minutes=0))
    rt.close()
    assert run_json(cli, "inspect")["cache"]["expired"] == 1
    assert run_json(cli, "gc")["removed"] == 1
    after = run_json(cli, "inspect")["cache"]
    assert after["items"] == 1 and after["expired"] == 0


def test_gc_of_an_identity_without_a_store_creates_nothing(cli: Run, root: Path) -> None:
    assert run_json(cli, "gc", identity="nobody")["removed"] == 0
    assert not (root / "nobody").exists()


def test_export_then_import_reproduces_memories_in_another_identity(
    cli: Run, sample: list[str], tmp_path: Path
) -> None:
    dump = tmp_path / "alice.jsonl"
    assert run_json(cli, "export", "--out", str(dump))["exported"] == 3
    assert run_json(cli, "import", str(dump), identity="bob")["imported"] == 3
    code, copied, _ = cli("export", identity="bob")
    assert code == 0
    original = sorted(dump.read_text().splitlines())
    assert sorted(copied.splitlines()) == original
    found = run_json(cli, "search", "billing database", identity="bob")
    assert found["results"][0]["id"] == sample[0]


def test_import_is_idempotent_on_id(cli: Run, sample: list[str], tmp_path: Path) -> None:
    dump = tmp_path / "alice.jsonl"
    run_json(cli, "export", "--out", str(dump))
    run_json(cli, "import", str(dump))
    run_json(cli, "import", str(dump))
    assert run_json(cli, "inspect")["memories"]["total"] == 3


def test_import_refuses_a_file_with_one_bad_line_and_writes_nothing(
    cli: Run, root: Path, sample: list[str], tmp_path: Path
) -> None:
    code, out, _ = cli("export")
    lines = out.splitlines()
    bad = json.loads(lines[1])
    bad["importance"] = 7
    lines[1] = json.dumps(bad)
    dump = tmp_path / "bad.jsonl"
    dump.write_text("\n".join(lines) + "\n")
    code, _, err = cli("import", str(dump), identity="bob")
    assert code == 2
    assert "line 2" in err and "importance" in err and "nothing was imported" in err
    assert len(err.strip().splitlines()) == 1
    assert not (root / "bob").exists()


def test_import_names_a_line_that_is_not_json(cli: Run, tmp_path: Path) -> None:
    dump = tmp_path / "broken.jsonl"
    dump.write_text('{"id": "x"\n')
    code, _, err = cli("import", str(dump))
    assert code == 2
    assert "line 1: not valid JSON" in err


def test_import_dry_run_validates_and_writes_nothing(cli: Run, root: Path, sample: list[str], tmp_path: Path) -> None:
    dump = tmp_path / "alice.jsonl"
    run_json(cli, "export", "--out", str(dump))
    result = run_json(cli, "import", str(dump), "--dry-run", identity="carol")
    assert result["read"] == 3 and result["imported"] == 0
    assert not (root / "carol").exists()


@pytest.mark.parametrize(
    "argv",
    [("inspect",), ("list",), ("search", "backup"), ("store", "A new note"), ("import", "-", "--dry-run")],
)
def test_json_output_is_one_json_document(
    cli: Run, sample: list[str], argv: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    document = run_json(cli, *argv)
    assert isinstance(document, dict) and document["identity"] == "alice"


def test_invalid_identity_exits_2_with_one_line_error(cli: Run) -> None:
    code, out, err = cli("list", identity="../etc")
    assert code == 2 and out == ""
    assert err.startswith("agent-memory: error: agent identity '../etc' is invalid")
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_invalid_input_exits_2_naming_the_field(cli: Run) -> None:
    code, _, err = cli("store", "note", "--importance", "3")
    assert code == 2
    assert "field 'importance'" in err and "Traceback" not in err


def test_error_is_json_on_stderr_with_json(cli: Run) -> None:
    code, _, err = cli("list", "--json", identity="bad/name")
    assert code == 2
    assert json.loads(err)["error"]["type"] == "identity_error"


def test_identity_comes_from_the_environment_without_a_flag(cli: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(IDENTITY_ENV, "from-env")
    assert run_json(cli, "inspect", identity=None)["identity"] == "from-env"


def test_identity_flag_wins_over_the_environment(cli: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(IDENTITY_ENV, "from-env")
    assert run_json(cli, "inspect", identity="from-flag")["identity"] == "from-flag"


def test_identity_defaults_to_default(cli: Run) -> None:
    assert run_json(cli, "inspect", identity=None)["identity"] == "default"


def test_root_comes_from_the_environment_without_a_flag(
    tmp_path: Path, embedder: CachedEmbedder, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AMPLIFIER_MEMORY_ROOT", str(tmp_path / "env-root"))
    assert main(["store", "A note kept under the env root", "--identity", "alice"]) == 0
    capsys.readouterr()
    assert (tmp_path / "env-root" / "alice" / STORE_META).is_file()


@pytest.fixture
def foreign_lock(root: Path) -> Iterator[None]:
    """Hold alice's store lock the way another process would."""
    (root / "alice").mkdir()
    fd = os.open(root / "alice" / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    yield
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)


def test_a_store_held_by_a_process_that_does_not_share_it_is_a_one_line_error(
    cli: Run, foreign_lock: None, tmp_path: Path
) -> None:
    # The lock is held but no owner answers (an older version, `agent-memory repair`): after the wait, an error.
    config = tmp_path / "short-wait.yaml"
    config.write_text("storage:\n  owner_wait_seconds: 0.5\n")
    code, _, err = cli("store", "a note", "--config", str(config))
    assert code == 1
    assert "in use by another process" in err and len(err.strip().splitlines()) == 1
    assert open_store_count() == 0


def test_model_mismatch_is_a_one_line_error(cli: Run, root: Path) -> None:
    (root / "alice").mkdir()
    meta = {"model_id": LOCAL_MODEL_ID, "dim": 128, "schema": 1}
    (root / "alice" / STORE_META).write_text(json.dumps(meta))
    code, _, err = cli("list")
    assert code == 1
    assert "was written with embedding model" in err and len(err.strip().splitlines()) == 1


def test_a_store_written_by_another_model_can_still_be_exported_and_reimported(
    cli: Run, root: Path, make_runtime: Callable[..., AgentMemory], tmp_path: Path
) -> None:
    rt = make_runtime("alice")
    stored = rt.memory().store(MemoryStoreInput(content="The nightly backup runs at 02:00 UTC", kind="fact"))
    rt.close()
    meta_path = root / "alice" / STORE_META
    # As if written by a model this install no longer has (the fp32 graph's id, before "-dq").
    meta_path.write_text(json.dumps({**json.loads(meta_path.read_text()), "model_id": "local:all-MiniLM-L6-v2-int8"}))
    assert cli("list")[0] == 1
    dump = tmp_path / "alice.jsonl"
    assert run_json(cli, "export", "--out", str(dump))["exported"] == 1
    assert json.loads(meta_path.read_text())["model_id"] == "local:all-MiniLM-L6-v2-int8"
    assert run_json(cli, "import", str(dump), identity="bob")["imported"] == 1
    found = run_json(cli, "search", "when does the backup run", identity="bob")
    assert found["results"][0]["id"] == stored.id


def test_usage_error_exits_2(cli: Run) -> None:
    code, _, err = cli("store", "x", "--kind", "opinion")
    assert code == 2 and "invalid choice" in err


def test_demo_runs_every_step_on_a_temporary_root(
    embedder: CachedEmbedder, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["demo", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True and report["identity"] == "demo"
    assert not Path(report["root"]).exists()
    assert [s["duplicate"] for s in report["stored"]] == [False] * 6 + [True]
    assert report["stored"][5]["superseded"]["id"] == report["stored"][3]["id"]
    assert "[REDACTED:openai_api_key]" in report["redacted_content"]
    assert all(search["results"] for search in report["searches"])
    assert report["searches"][0]["results"][0]["kind"] == "decision"
    assert report["memory_count"] == 6
    assert report["events"]["memory:stored"] == 7
    assert report["searches"][3]["results"][0]["content"].startswith("CI now runs on Buildkite")
    assert [lookup["answer"] for lookup in report["plans"]["lookups"]] == ["hit", "candidate"]
    near_miss = report["plans"]["lookups"][1]["candidates"][0]
    assert any("production" in d and "staging" in d for d in near_miss["differences"]), near_miss["differences"]
    assert [w["merged"] for w in report["cache"]["written"]] == [False, False, False, True]
    assert report["cache"]["pack"]["token_count"] <= 200


def test_demo_with_root_keeps_the_store(
    embedder: CachedEmbedder, capsys: pytest.CaptureFixture[str], root: Path
) -> None:
    assert main(["demo", "--root", str(root)]) == 0
    out = capsys.readouterr().out
    assert "exact duplicate" in out and "Timings" in out
    assert (root / "demo" / STORE_META).is_file()


@pytest.mark.slow
def test_console_script_inspect_json_in_a_subprocess(cli: Run, root: Path, sample: list[str]) -> None:
    script = Path(sys.executable).parent / "agent-memory"
    env = {k: v for k, v in os.environ.items() if k != IDENTITY_ENV}
    done = subprocess.run(
        [str(script), "inspect", "--json", "--root", str(root), "--identity", "alice"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["memories"]["total"] == 3


@pytest.mark.slow
def test_console_script_invalid_identity_exits_2_without_traceback(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "agent-memory"
    done = subprocess.run(
        [str(script), "list", "--identity", "..", "--root", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and "is invalid" in done.stderr


@pytest.fixture
def server_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A --config file for the server backend; the 'server' is qdrant-client's local mode under tmp_path."""
    from qdrant_client import QdrantClient

    from amplifier_module_tool_agent_memory.store import server as server_storage

    monkeypatch.setattr(server_storage, "client_factory", lambda config: QdrantClient(path=str(tmp_path / "qdrant")))
    path = tmp_path / "server.yaml"
    path.write_text("storage:\n  backend: server\n  url: http://qdrant.test:6333\n")
    return path


def test_inspect_and_gc_work_on_the_server_backend(cli: Run, server_config: Path, root: Path) -> None:
    config = ["--config", str(server_config)]
    assert run_json(cli, "store", "The API listens on port 8080", "--kind", "fact", *config)["created"] is True
    report = run_json(cli, "inspect", *config)
    assert report["backend"] == "server" and report["exists"] is True
    assert report["memories"]["total"] == 1 and report["disk_bytes"] is None
    assert report["embedding_model"] == LOCAL_MODEL_ID
    assert run_json(cli, "gc", *config)["removed"] == 0
    assert not (root / "alice").exists()


# Deleting a whole identity (maintenance/identity.py)


def test_delete_identity_needs_the_name_again_and_then_deletes_only_that_identity(
    cli: Run, root: Path, make_runtime: Callable[..., AgentMemory]
) -> None:
    for name in ("alice", "bob"):
        rt = make_runtime(name)
        rt.memory().store(MemoryStoreInput(content=f"{name} keeps the release notes in docs/releases"))
        rt.close()
    for confirm in ([], ["--confirm", "bob"]):
        code, _, err = cli("delete-identity", *confirm, "--json")
        assert code == 2 and "--confirm alice" in json.loads(err)["error"]["message"]
        assert (root / "alice" / STORE_META).is_file()
    result = run_json(cli, "delete-identity", "--confirm", "alice")
    assert result["deleted"] is True and result["backend"] == "edge" and result["bytes"] > 0
    assert not (root / "alice").exists() and not any(p.name.startswith(".alice") for p in root.iterdir())
    assert run_json(cli, "list", identity="bob")["count"] == 1
    code, _, err = cli("delete-identity", "--confirm", "alice")
    assert code == 2 and "no memory store of identity alice" in err


def test_delete_identity_refuses_a_store_that_is_open(
    cli: Run, root: Path, make_runtime: Callable[..., AgentMemory]
) -> None:
    rt = make_runtime("alice")
    rt.memory().store(MemoryStoreInput(content="The staging database is refreshed every Sunday"))
    code, _, err = cli("delete-identity", "--confirm", "alice", "--json")
    assert code == 1 and json.loads(err)["error"]["type"] == "store_in_use"
    rt.close()
    assert run_json(cli, "list")["count"] == 1
    # Another holder of the store's lock (flock locks an open file, so this is how another process looks): refused.
    fd = os.open(root / "alice" / LOCK_FILE, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        code, _, err = cli("delete-identity", "--confirm", "alice", "--json")
    finally:
        os.close(fd)
    assert code == 1 and json.loads(err)["error"]["type"] == "store_in_use"
    assert run_json(cli, "list")["count"] == 1


def test_delete_identity_on_the_server_deletes_its_collections_only(cli: Run, server_config: Path) -> None:
    config = ["--config", str(server_config)]
    for name in ("alice", "bob"):
        run_json(cli, "store", f"{name} deploys on Fridays", *config, identity=name)
    result = run_json(cli, "delete-identity", "--confirm", "alice", *config)
    assert result["backend"] == "server" and result["collections"] == ["agent_memory__alice__memories"]
    assert run_json(cli, "list", *config)["count"] == 0
    assert run_json(cli, "list", *config, identity="bob")["count"] == 1
