"""OpenCode's record of a session's spend: read only for the session asked, under the parent it must have,
with every number checked, and nothing when the database is not what is expected."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from yeetui.external.records.opencode import Spend, session_spend
from yeetui.external.spend import MAX_TOKENS
from yeetui.messages import Usage

COLUMNS = ("id", "parent_id", "cost", "tokens_input", "tokens_output", "tokens_cache_read", "tokens_cache_write")


def _database(data: Path, rows: list[tuple], *, schema: str | None = None) -> dict[str, str]:
    path = data / "opencode" / "opencode.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as db:
        db.execute(schema or "CREATE TABLE session (id TEXT PRIMARY KEY, parent_id TEXT, cost REAL, tokens_input"
                   " INTEGER, tokens_output INTEGER, tokens_cache_read INTEGER, tokens_cache_write INTEGER,"
                   " title TEXT)")
        for row in rows:
            db.execute(f"INSERT INTO session ({', '.join(COLUMNS)}) VALUES (?, ?, ?, ?, ?, ?, ?)", row)
    return {"XDG_DATA_HOME": str(data)}


def test_a_childs_spend_under_its_parent(tmp_path: Path) -> None:
    env = _database(tmp_path, [("ses_root", None, 0.05, 3000, 17, 0, 0),
                               ("ses_child", "ses_root", 0.001, 300, 5, 40, 2)])
    assert session_spend(env, "ses_child", parent_id="ses_root") == Spend(
        Usage(input_tokens=300, output_tokens=5, cache_read_tokens=40, cache_write_tokens=2), 0.001)
    assert session_spend(env, "ses_root", parent_id=None) == Spend(Usage(input_tokens=3000, output_tokens=17), 0.05)
    # another parent than the one it must have, or a session not there: nothing
    assert session_spend(env, "ses_child", parent_id="ses_other") is None
    assert session_spend(env, "ses_child", parent_id=None) is None
    assert session_spend(env, "ses_none", parent_id="ses_root") is None


def test_home_is_where_it_looks_without_xdg(tmp_path: Path) -> None:
    _database(tmp_path / ".local" / "share", [("ses_a", None, 0.5, 1, 1, 0, 0)])
    assert session_spend({"HOME": str(tmp_path)}, "ses_a", parent_id=None) is not None
    assert session_spend({}, "ses_a", parent_id=None) is None


@pytest.mark.parametrize("session, parent", [("ses_a' OR 1=1 --", None), ("../x", None), ("ses_a", "*")])
def test_ids_that_are_not_plain_ids_are_not_looked_up(tmp_path: Path, session: str, parent: str | None) -> None:
    env = _database(tmp_path, [("ses_a", None, 0.5, 1, 1, 0, 0)])
    assert session_spend(env, session, parent_id=parent) is None


def test_hostile_numbers_and_other_schemas(tmp_path: Path) -> None:
    env = _database(tmp_path, [("ses_a", None, "free", -5, 10**15, "seven", 2.5),
                               ("ses_b", None, float("inf"), 1, 2, 3, 4)])
    assert session_spend(env, "ses_a", parent_id=None) == Spend(Usage(output_tokens=MAX_TOKENS), None)  # clamped
    assert session_spend(env, "ses_b", parent_id=None) == Spend(
        Usage(input_tokens=1, output_tokens=2, cache_read_tokens=3, cache_write_tokens=4), None)
    other = tmp_path / "other"
    env = _database(other, [], schema="CREATE TABLE session (id TEXT, parent_id TEXT, cost REAL, tokens_input"
                    " INTEGER, tokens_output INTEGER, tokens_cache_read INTEGER, tokens_cache_write INTEGER)")
    (other / "opencode" / "opencode.db").write_bytes(b"not a database at all" * 100)
    assert session_spend(env, "ses_a", parent_id=None) is None
    # the database is only read
    env = _database(tmp_path / "third", [("ses_c", None, 0.1, 1, 1, 0, 0)])
    before = (tmp_path / "third" / "opencode" / "opencode.db").read_bytes()
    session_spend(env, "ses_c", parent_id=None)
    assert (tmp_path / "third" / "opencode" / "opencode.db").read_bytes() == before
