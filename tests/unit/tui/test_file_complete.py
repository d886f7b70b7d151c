from __future__ import annotations

from pathlib import Path

from yeetui.tui.file_complete import project_files


def test_lists_matching_entries_and_stays_inside(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "auth.py").write_text("")
    (tmp_path / "setup.py").write_text("")
    (tmp_path / ".env").write_text("")
    assert project_files(tmp_path, "s") == ["setup.py", "src/"]
    assert project_files(tmp_path, "src/a") == ["src/auth.py"]
    assert project_files(tmp_path, ".e") == [".env"]
    assert project_files(tmp_path, "../") == []
