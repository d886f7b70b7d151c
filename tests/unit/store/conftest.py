"""A fresh Store in a temp dir, and a session in it, for the store's tests (a test module may override either)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from yeetui.store import SessionRecord, Store


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with await Store.open(tmp_path / "yeetui.db") as opened:
        yield opened


@pytest.fixture
async def session(store: Store) -> SessionRecord:
    return await store.create_session(profile="generic")
