"""The docs' generated reference pages are current and complete, and the README keeps its promises.

The pages under docs/reference/ are generated from the settings model, the argparse parsers, the profile schema
and the TUI's BINDINGS (`yeetui.docs_reference`); these tests regenerate them in memory and compare.
"""

from __future__ import annotations

import re
import types
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic.fields import FieldInfo

from yeetui import docs_reference
from yeetui.settings.config import Settings, load_settings
from yeetui.tui.keys_reference import key_entries

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "reference"
README = ROOT / "README.md"
FIX = f"regenerate them: `{docs_reference.COMMAND}` (from the repository root), and commit the result"


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    return docs_reference.pages()


def test_committed_pages_are_current(pages: dict[str, str]) -> None:
    stale = [name for name, text in pages.items()
             if not (REFERENCE / name).is_file() or (REFERENCE / name).read_text(encoding="utf-8") != text]
    assert not stale, f"docs/reference/{', '.join(stale)} out of date with the code; {FIX}"
    extra = sorted(path.name for path in REFERENCE.glob("*.md") if path.name not in pages)
    assert not extra, f"docs/reference/ holds pages no generator writes: {extra}; remove them or {FIX}"


def test_every_settings_key_has_an_entry(pages: dict[str, str]) -> None:
    keys = [key for key, _ in docs_reference.settings_keys()]
    assert "tools.bash_sandbox" in keys and "project_grants.mcp_secrets" in keys and "providers.NAME.api_key" in keys
    missing = [key for key in keys if f"| `{key}` |" not in pages["config.md"]]
    assert not missing, f"settings keys without an entry in docs/reference/config.md: {missing}; {FIX}"


def test_every_project_rule_names_a_real_key() -> None:
    keys = {key for key, _ in docs_reference.settings_keys()}
    stale = [key for key in docs_reference.PROJECT_RULES if key not in keys]
    assert not stale, f"yeetui.docs_reference.PROJECT_RULES names keys Settings no longer has: {stale}"


def test_every_command_and_option_has_an_entry(pages: dict[str, str]) -> None:
    found = list(docs_reference.commands())
    words = [" ".join(path) for path, _, _ in found]
    assert {"yeetui run", "yeetui agents start", "yeetui mcp serve", "yeetui schedule add"} <= set(words)
    assert "yeetui agent" not in words  # the hidden worker command stays out, as in --help
    sections = re.split(r"^## ", pages["cli.md"], flags=re.M)
    by_name = {section.split("`")[1]: section for section in sections[1:]}
    for path, _, parser in found:
        name = " ".join(path)
        assert name in by_name, f"`{name}` has no entry in docs/reference/cli.md; {FIX}"
        for action in parser._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"`{option}" in by_name[name], f"`{name} {option}` has no entry; {FIX}"


def test_every_binding_has_an_entry(pages: dict[str, str]) -> None:
    entries = key_entries()
    ids = {entry.binding_id for entry in entries}
    assert {"toggle_pair", "ledger.steer", "inbox.merge", "quit"} <= ids
    page = pages["keys.md"]
    missing = [entry for entry in entries
               if (f"| `{entry.binding_id}` | `{entry.keys}` |" if entry.binding_id else f"| `{entry.keys}` |")
               not in page]
    assert not missing, f"bindings without an entry in docs/reference/keys.md: {missing}; {FIX}"


def test_every_profile_field_has_an_entry(pages: dict[str, str]) -> None:
    import json

    schema = json.loads(docs_reference.PROFILE_SCHEMA.read_text(encoding="utf-8"))
    fields = list(schema["properties"])
    for spec in schema["$defs"].values():
        fields += list(spec.get("properties", {}))
    assert "prompt" in fields
    missing = [name for name in fields if f"| `{name}` |" not in pages["profile.md"]]
    assert not missing, f"profile fields without an entry in docs/reference/profile.md: {missing}; {FIX}"


def _other_values(info: FieldInfo) -> list[Any]:
    """Valid values of a scalar setting other than its default (none when the setting is not scalar)."""
    annotation = info.annotation
    default = info.default
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        options = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        if len(options) != 1:
            return []
        annotation = options[0]
    if typing.get_origin(annotation) is typing.Literal:
        return [choice for choice in typing.get_args(annotation) if choice != default]
    kind = annotation
    if kind is bool:
        return [not default]
    if kind in (int, float) and isinstance(default, int | float):
        return [default + 1]
    if kind is str:
        return ["anthropic/claude-haiku-4-5" if "/" in str(default) else f"{default}-other"]
    return []


def _nested(key: str, value: Any) -> dict[str, Any]:
    data: dict[str, Any] = {}
    node = data
    parts = key.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value
    return data


def _read(settings: Settings, key: str) -> Any:
    value: Any = settings
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else getattr(value, part, None)
    return value


def test_the_project_column_matches_what_the_loader_does(tmp_path: Path) -> None:
    """For every scalar key, an untrusted project's config may set any value other than the default where the page
    says `yes`, and has at least one such value dropped where the page says otherwise."""
    env = {"YEETUI_CONFIG_DIR": str(tmp_path / "config"), "YEETUI_DATA_DIR": str(tmp_path / "data")}
    project = tmp_path / "project"
    (project / ".yeetui").mkdir(parents=True)
    checked = 0
    for key, info in docs_reference.settings_keys():
        values = _other_values(info)
        if not values or key.startswith("budget."):  # budget: a project may add a limit none was set for
            continue
        honoured = []
        for value in values:
            (project / ".yeetui" / "config.yaml").write_text(yaml.safe_dump(_nested(key, value)), encoding="utf-8")
            honoured.append(_read(load_settings(project_dir=project, env=env, trusted=False).settings, key) == value)
        rule = docs_reference.project_rule(key)
        assert all(honoured) == (rule == "yes"), (
            f"{key}: an untrusted project's {values!r} were honoured {honoured}, but docs/reference/config.md says "
            f"{rule!r}: fix yeetui.docs_reference.PROJECT_RULES")
        checked += 1
    assert checked >= 20


def _fenced_commands(text: str) -> list[str]:
    return re.findall(r"^```bash\n(.*?)\n```", text, flags=re.M | re.S)


def test_readme_is_short_and_keeps_its_first_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150, "README.md grew past 150 lines: move the detail into a docs/ page"
    assert _fenced_commands(text)[:2] == [
        "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/yeetui",
        "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[test]' && python -m pytest -q -n auto",
    ]
    for target in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / target).is_file(), f"README.md links to {target}, which does not exist"
