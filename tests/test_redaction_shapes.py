"""The four secret shapes issue 17's probes still found, generated in every surrounding people
paste them in, must not survive anywhere: not in ``redact``, not in what any tool answers, not in
events, logs, the CLI's output or an export, not in the journal's or the engine's files.

Shapes: ``password=<value>`` after a label that itself names a password (the label's own match
used to hide the assignment inside it); a secret assignment or a JSON password quoted inside a
shell command (``export TOKEN='DB_PASSWORD=...'``, ``export CONFIG='{"password": "..."}'``);
``mysql -p<password>``. Surroundings: the start of a text, mid-sentence, inside JSON (so the
command's quotes arrive escaped, as a plan's arguments carry them), YAML, ``.env`` and a shell
command. Secrets are generated (letters and digits, and with symbols), several per shape."""

from __future__ import annotations

import json
import logging
import random
import string
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import pytest

from amplifier_module_tool_agent_memory.cli.main import main as cli_main
from amplifier_module_tool_agent_memory.redaction import redact, redact_json
from amplifier_module_tool_agent_memory.runtime import AgentMemory

if TYPE_CHECKING:
    from conftest import SecretProbe


def _secret(rng: random.Random, symbols: str = "") -> str:
    """16 characters that read as random: at least one upper-case letter, lower-case letter and digit."""
    alphabet = string.ascii_letters + string.digits + symbols
    while True:
        value = "".join(rng.choice(alphabet) for _ in range(16))
        if (any(c.isupper() for c in value) and any(c.islower() for c in value) and any(c.isdigit() for c in value)
                and value[0].isalnum() and (not symbols or any(c in symbols for c in value))):
            return value


_RNG = random.Random(17)
# Letters and digits (the probes' shape), lower-case and digits, and with the symbols passwords carry.
SECRETS: tuple[str, ...] = (_secret(_RNG), _secret(_RNG), _secret(_RNG, "!@#%^*-_"))

# shape -> templates of the secret-bearing text ({s} is the secret)
SHAPES: dict[str, tuple[str, ...]] = {
    "label_names_a_password": (
        "memo password_assign: password={s}",
        "db_password_note: password={s}",
        "wifi_password: password={s}",
        "passwords.prod: pwd={s}",
    ),
    "assignment_quoted_in_shell": (
        "export TOKEN='DB_PASSWORD={s}'",
        "export TOKEN='SECRET_KEY={s}'",
        "export APP_ENV='DB_PASSWORD={s}'",
        "docker run -e 'SECRET_KEY={s}' api:latest",
    ),
    "json_password_quoted_in_shell": (
        "export TOKEN='{{\"password\": \"{s}\"}}'",
        "export CONFIG='{{\"user\": \"svc\", \"password\": \"{s}\"}}'",
        "curl -d '{{\"password\":\"{s}\"}}' https://auth.internal/login",
    ),
    "mysql_p": (
        "mysql -p{s}",
        "mysql -u root -h db.internal -p{s} app_db",
        "mysqldump -uroot -p'{s}' app_db > backup.sql",
    ),
}


def _json(x: str) -> str:
    return json.dumps({"step": "deploy", "command": x})


SURROUNDINGS: dict[str, Callable[[str], str]] = {
    "start": lambda x: x,
    "mid_sentence": lambda x: f"Yesterday I ran {x} on the staging box and it worked.",
    "json": _json,
    "yaml": lambda x: f"deploy:\n  steps:\n    - run: {x}\n    - run: make migrate\n",
    "dotenv": lambda x: f"APP_ENV=production\nSETUP_CMD={x}\nLOG_LEVEL=info\n",
    "shell_command": lambda x: f'ssh deploy@db.internal "{x}" && echo done',
}


class Case(NamedTuple):
    shape: str
    text: str
    secret: str


def _cases() -> list[Case]:
    cases = []
    for shape, templates in SHAPES.items():
        for t, template in enumerate(templates):
            for w, wrap in enumerate(SURROUNDINGS.values()):
                secret = SECRETS[(t + w) % len(SECRETS)]
                cases.append(Case(shape, wrap(template.format(s=secret)), secret))
    return cases


CASES = _cases()
IDS = [
    f"{shape}-{t}-{where}"
    for shape, templates in SHAPES.items()
    for t in range(len(templates))
    for where in SURROUNDINGS
]


def test_the_cases_cover_every_shape_in_every_surrounding() -> None:
    assert len(CASES) == sum(len(t) for t in SHAPES.values()) * len(SURROUNDINGS) == len(IDS)
    assert len(set(SECRETS)) == len(SECRETS)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_redact_removes_the_secret_and_keeps_its_surroundings(case: Case) -> None:
    cleaned, found = redact(case.text)
    assert case.secret not in cleaned
    assert found and all(f"[REDACTED:{name}]" in cleaned for name in found)
    # Only the secret goes: the words around it stay.
    for word in ("staging", "deploy", "SETUP_CMD", "make migrate", "echo done"):
        if word in case.text:
            assert word in cleaned
    assert redact(cleaned) == (cleaned, [])  # nothing more to find the second time


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_redact_json_removes_the_secret_from_a_plan_argument(case: Case) -> None:
    found: list[str] = []
    cleaned = redact_json({"command": case.text, "steps": [{"script": case.text}]}, found)
    assert case.secret not in json.dumps(cleaned)
    assert found


@pytest.mark.parametrize("text", [
    "mysql -u root -p app_db",  # a bare -p prompts for the password
    "mysql -h db -P 3306 -u root",  # -P is the port
    "mkdir -p /var/lib/mysql && docker run -p 3306:3306 mysql:8",
    "ssh -p 2222 admin@db.internal",
    "mysql -p$MYSQL_PWD app_db",
    "password_min_length: 12 and password_policy: strict",
    "the password_reset: email flow is described in the docs",
    "export TOKEN='${API_TOKEN}' and export CONFIG='{\"password\": \"<your password>\"}'",
    "--password-file=/run/secrets/db and --password=$DB_PASSWORD",
    '{"command": "grep -r \\"token_count\\" src/"}',
])
def test_look_alikes_of_the_shapes_are_left_as_they_are(text: str) -> None:
    assert redact(text) == (text, [])


# ---------------------------------------------------------------------------------------
# End to end: every case through every tool that stores text (conftest's ``secret_probe``).


def _leaked(text: str) -> list[str]:
    return sorted({c.secret for c in CASES if c.secret in text})


@pytest.mark.reliability
async def test_no_shape_survives_in_answers_files_export_or_the_cli(
    make_runtime: Callable[..., AgentMemory], root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture, secret_probe: SecretProbe, call: Any, runtime_tools: Any,
) -> None:
    caplog.set_level(logging.DEBUG)
    control = "ordinary-control-marker-Zq4Tn"
    rt = make_runtime()
    tools = runtime_tools(rt)
    answers: list[Any] = []
    for n, case in enumerate(CASES):
        ids = await secret_probe.store(tools, case.text, n)
        answers.append(ids)
        answers.append(await call(tools["memory_get"], {"id": ids["memory"]["id"]}))
        answers.append(await call(tools["cache_get"], {"block_id": ids["item"]["block_id"]}))
        answers.append(await call(tools["plan_lookup"], {"prompt": secret_probe.plan(case.text, n)["prompt"]}))
        # A failing call with the secret in a field that breaks a rule: its error and log line.
        answers.append((await tools["memory_search"].execute({"query": case.text, "since": case.text})).error)
    answers.append(await call(tools["memory_search"], {"query": "run the setup with mysql"}))
    answers.append(await call(tools["memory_list"], {"limit": 100}))
    answers.append(await call(tools["cache_pack"], {"scope": "task:1", "token_budget": 8000}))
    answers.append(await call(tools["cache_search"], {"query": "export TOKEN", "scope": "task:2"}))
    await call(tools["memory_store"], {"content": f"a plain note: {control}"})
    await call(tools["cache_compact"], {"scope": "task:3"})
    assert not _leaked(json.dumps(answers, default=str))
    rt.close()

    # The journal and the engine files: every byte under the identity's folder.
    stored = secret_probe.stored_text(root)
    assert control in stored  # the scan sees stored text at all
    assert not _leaked(stored)

    # The CLI: an export, and the memories as the CLI lists and searches them.
    out = tmp_path / "export.jsonl"
    assert cli_main(["export", "--root", str(root), "--identity", "alice", "--out", str(out)]) == 0
    capsys.readouterr()
    for case in CASES[::8]:  # the CLI's own store command, every shape
        assert cli_main(["store", case.text, "--root", str(root), "--identity", "alice", "--json"]) == 0
    assert cli_main(["list", "--limit", "100", "--root", str(root), "--identity", "alice", "--json"]) == 0
    assert cli_main(["search", "mysql -p password", "--root", str(root), "--identity", "alice", "--json"]) == 0
    printed = capsys.readouterr().out
    assert "[REDACTED:" in printed
    assert not _leaked(out.read_text() + printed)

    logged = " ".join(f"{r.getMessage()} {r.__dict__}" for r in caplog.records)
    assert not _leaked(logged)


@pytest.mark.reliability
async def test_no_shape_survives_in_events(
    recorded_events: tuple[dict[str, Any], list[dict[str, Any]]], secret_probe: SecretProbe
) -> None:
    tools, seen = recorded_events
    for n, case in enumerate(CASES[::3]):
        await secret_probe.store(tools, case.text, n)
        await tools["plan_lookup"].execute({"prompt": case.text})
        await tools["memory_search"].execute({"query": case.text})
    assert len({e["event"] for e in seen}) >= 5
    assert not _leaked(json.dumps(seen, default=str))


@pytest.mark.reliability
async def test_a_memory_at_its_limits_whose_secrets_grew_it_is_exported_and_imported(
    make_runtime: Callable[..., AgentMemory], root: Path, tmp_path: Path, call: Any, runtime_tools: Any
) -> None:
    # A marker is longer than the secret it replaces: what was within the input's limits is stored
    # longer, and export (which validates every record) used to fail on the whole store for it.
    secret = SECRETS[0]
    tag = f"mysql -p{secret} " + "t" * (100 - len(f"mysql -p{secret} "))
    content = f"password_note: password={secret} " + "word " * 2000
    content = content[:10_000]
    assert len(tag) == 100 and len(content) == 10_000
    rt = make_runtime()
    stored = await call(runtime_tools(rt)["memory_store"], {"content": content, "tags": [tag]})
    assert stored["redacted"] == {"content": ["password_assignment"], "tags": ["mysql_password"]}
    rt.close()
    out = tmp_path / "export.jsonl"
    assert cli_main(["export", "--root", str(root), "--identity", "alice", "--out", str(out)]) == 0
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(record["tags"][0]) > 100 and len(record["content"]) > 10_000 and secret not in out.read_text()
    assert cli_main(["import", str(out), "--root", str(root), "--identity", "bob", "--json"]) == 0
