"""The documentation stays true to the tree: the README's and the docs pages' links lead to files and
headings that exist, every config field is documented in docs/settings.md, and every file the
architecture page names exists (the README once named a module that had been removed)."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel

from amplifier_module_tool_agent_memory.config import MemoryConfig

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "modules/tool-agent-memory/amplifier_module_tool_agent_memory"
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def doc_files() -> list[Path]:
    return [REPO / "README.md", REPO / "CHANGELOG.md", *sorted((REPO / "docs").glob("*.md"))]


def anchors(path: Path) -> set[str]:
    """GitHub's heading anchors: lowercased, punctuation dropped, spaces to hyphens."""
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    found = set()
    for heading in re.findall(r"^#+ (.+)$", text, re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


def test_every_relative_link_of_the_docs_leads_to_a_file_and_heading_that_exist() -> None:
    broken = []
    for page in doc_files():
        for target in LINK.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            file_part, _, anchor = target.partition("#")
            dest = (page.parent / file_part).resolve() if file_part else page
            if not dest.exists():
                broken.append(f"{page.relative_to(REPO)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{page.relative_to(REPO)}: {target} (no such heading)")
    assert not broken, broken


def test_the_readme_links_every_docs_page_and_stays_short() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    unlinked = [p.name for p in (REPO / "docs").glob("*.md") if f"(docs/{p.name})" not in readme]
    assert not unlinked, f"link these pages from README.md's 'Read more': {unlinked}"
    # A newcomer's five minutes: the reference belongs in docs/.
    assert len(readme.splitlines()) <= 200


def config_fields(model: type[BaseModel], prefix: str = "") -> list[str]:
    names = []
    for name, field in model.model_fields.items():
        kind = field.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            names += config_fields(kind, f"{prefix}{name}.")
        else:
            names.append(prefix + name)
    return names


def test_every_setting_is_documented_with_its_default() -> None:
    settings = (REPO / "docs/settings.md").read_text(encoding="utf-8")
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `([\w.]+)` \| ([^|]+) \|", settings, re.MULTILINE)}
    fields = config_fields(MemoryConfig)
    assert len(fields) > 30
    missing = [name for name in fields if name not in rows]
    assert not missing, f"add these settings to docs/settings.md's table: {missing}"
    defaults = MemoryConfig()
    for name in fields:
        value: object = defaults
        for part in name.split("."):
            value = getattr(value, part)
        shown = rows[name].strip()
        if value is None:
            assert shown == "none", (name, shown)
        elif isinstance(value, bool):
            assert shown == f"`{str(value).lower()}`", (name, shown)
        elif isinstance(value, tuple):
            assert shown == f"`{value}`", (name, shown)
        else:
            assert shown == f"`{value}`", (name, shown)


def test_every_file_the_architecture_page_names_exists() -> None:
    page = (REPO / "docs/architecture.md").read_text(encoding="utf-8")
    tree = re.search(r"^```\n(.*?)^```", page, re.MULTILINE | re.DOTALL)
    assert tree, "docs/architecture.md has lost its tree of the package"
    folder = ""
    missing = []
    for line in tree.group(1).splitlines():
        head = re.match(r"^(\w+)/", line)
        if head:
            folder = head.group(1)
            assert (PACKAGE / folder).is_dir(), f"docs/architecture.md names the folder {folder}/, which is gone"
        elif not line.startswith(" "):
            folder = ""
        for name in re.findall(r"([\w/]+\.py)\b", line):
            if not ((PACKAGE / folder / name).exists() or (PACKAGE / name).exists()):
                missing.append(f"{folder}/{name}" if folder else name)
    assert not missing, f"docs/architecture.md names files that no longer exist: {missing}"
    # The file the README's architecture section used to name after it was removed.
    assert "matching.py" not in page
