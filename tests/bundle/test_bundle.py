"""The bundle's files as amplifier-foundation reads them (foundation is not on PyPI, so the checks are
made here): bundle.md's YAML front matter, foundation included first and then our behavior, every
@mention and context include pointing at a file that exists, the behavior free of any session of its
own (it composes onto another bundle with --app), the module's self-referencing git source pointing at
the module folder whose pyproject declares the entry point, and one canonical repository URL shared by
the bundle files and the README."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import yaml

from amplifier_module_tool_agent_memory.config import MemoryConfig, parse_config

REPO = Path(__file__).resolve().parents[2]
NAMESPACE = "agent-memory"
MODULE_ID = "tool-agent-memory"
MODULE_DIR = "modules/tool-agent-memory"
FOUNDATION = "git+https://github.com/microsoft/amplifier-foundation@main"
GIT_SOURCE = re.compile(r"^git\+(?P<repo>https://github\.com/[^@#\s]+)@(?P<ref>[^#\s]+)#subdirectory=(?P<sub>\S+)$")
# Any git URL written in the files a user reads or the loader follows.
GIT_URL = re.compile(r"git\+(https://github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+?)(?:\.git)?@")


def canonical_url() -> str:
    """The one place the repository URL is written: the module's [project.urls]."""
    meta = tomllib.loads((REPO / MODULE_DIR / "pyproject.toml").read_text())
    return str(meta["project"]["urls"]["Repository"])


def front_matter(path: Path) -> tuple[dict[str, Any], str]:
    """YAML front matter and body, split the way foundation's parser splits them."""
    match = re.match(r"^---\s*\n(.*?)\n---\s*\n?", path.read_text(encoding="utf-8"), re.DOTALL)
    assert match, f"{path.name} has no YAML front matter"
    data = yaml.safe_load(match.group(1))
    assert isinstance(data, dict)
    return data, path.read_text(encoding="utf-8")[match.end():]


def behavior() -> dict[str, Any]:
    data = yaml.safe_load((REPO / "behaviors" / "agent-memory.yaml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def our_tool_entry() -> dict[str, Any]:
    entries = [t for t in behavior().get("tools", []) if t.get("module") == MODULE_ID]
    assert len(entries) == 1
    return entries[0]


def resolve_own(reference: str) -> Path:
    """``agent-memory:path`` -> the file foundation would load (a bundle reference may omit .yaml/.md)."""
    namespace, _, rel = reference.partition(":")
    assert namespace == NAMESPACE, reference
    base = REPO / rel
    for candidate in (base, base.with_suffix(".yaml"), base.with_suffix(".md")):
        if candidate.is_file():
            return candidate
    raise AssertionError(f"{reference} resolves to no file under the repository")


def test_bundle_front_matter_names_the_bundle() -> None:
    meta, _ = front_matter(REPO / "bundle.md")
    assert meta["bundle"]["name"] == NAMESPACE
    assert meta["bundle"]["version"]


def test_bundle_includes_foundation_first_then_our_behavior() -> None:
    meta, _ = front_matter(REPO / "bundle.md")
    includes = [entry["bundle"] for entry in meta["includes"]]
    assert includes == [FOUNDATION, f"{NAMESPACE}:behaviors/agent-memory"]


def test_bundle_includes_resolve_to_files() -> None:
    meta, _ = front_matter(REPO / "bundle.md")
    own = [entry["bundle"] for entry in meta["includes"] if entry["bundle"].startswith(f"{NAMESPACE}:")]
    assert [resolve_own(ref).relative_to(REPO).as_posix() for ref in own] == ["behaviors/agent-memory.yaml"]


def test_bundle_body_mentions_of_our_files_exist() -> None:
    _, body = front_matter(REPO / "bundle.md")
    mentions = re.findall(r"@([a-z0-9-]+:[^\s)]+)", body)
    own = [m for m in mentions if m.startswith(f"{NAMESPACE}:")]
    assert own, "the bundle's instructions mention none of our context files"
    for mention in own:
        resolve_own(mention)
    assert {m.partition(":")[0] for m in mentions} <= {NAMESPACE, "foundation"}


def test_behavior_context_includes_exist() -> None:
    includes = behavior()["context"]["include"]
    assert includes
    for reference in includes:
        assert not reference.startswith("@"), "no @ inside YAML"
        resolve_own(reference)


def test_behavior_brings_no_session_so_it_composes_with_app() -> None:
    data = behavior()
    assert "session" not in data
    assert "includes" not in data
    assert data["bundle"]["name"] != NAMESPACE, "the behavior must not take the root bundle's name"


def test_module_source_is_the_self_referencing_git_url() -> None:
    match = GIT_SOURCE.match(our_tool_entry()["source"])
    assert match, our_tool_entry()["source"]
    assert (match["repo"], match["ref"], match["sub"]) == (canonical_url(), "main", MODULE_DIR)


def test_module_source_folder_declares_the_entry_point_and_the_cli() -> None:
    sub = GIT_SOURCE.match(our_tool_entry()["source"])
    assert sub
    meta = tomllib.loads((REPO / sub["sub"] / "pyproject.toml").read_text())
    entry_points = meta["project"]["entry-points"]["amplifier.modules"]
    assert entry_points == {MODULE_ID: "amplifier_module_tool_agent_memory:mount"}
    assert meta["project"]["scripts"]["agent-memory"].startswith("amplifier_module_tool_agent_memory.cli")
    assert (REPO / sub["sub"] / "amplifier_module_tool_agent_memory" / "__main__.py").is_file()


def test_behavior_config_is_a_valid_module_config_at_its_defaults() -> None:
    # Every documented setting in the behavior is a real config field, set to the model's default.
    assert parse_config(our_tool_entry()["config"]) == MemoryConfig()


def test_every_git_url_of_this_repository_is_the_canonical_one() -> None:
    texts = {name: (REPO / name).read_text(encoding="utf-8")
             for name in ("bundle.md", "behaviors/agent-memory.yaml", "README.md")}
    external = {FOUNDATION.removeprefix("git+").removesuffix("@main")}
    for name, text in texts.items():
        ours = {url for url in GIT_URL.findall(text) if url not in external}
        assert ours <= {canonical_url()}, (name, ours)
    assert canonical_url() in texts["README.md"]
    assert "github.com/ORG" not in texts["README.md"]


def test_readme_install_commands_name_the_bundle_and_the_behavior() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    url = canonical_url()
    assert f"amplifier bundle add git+{url}@main" in readme
    assert f"git+{url}@main#subdirectory=behaviors/agent-memory.yaml" in readme
    assert f"git+{url}@main#subdirectory={MODULE_DIR}" in readme
