"""`bench.measure.run_case`: a case forked from the driver (`--quick`) is a process of its own, as a fresh one is —
its directory, environment and exit status — and its failure is reported with what it printed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench import measure

CASE = """\
import json, os, sys
sys.path.insert(0, {root!r})
from bench.measure import emit
if sys.argv[1] == "fail":
    raise ValueError("the case broke")
if sys.argv[1] == "exit":
    sys.exit("the case gave up")
emit({{"cwd": os.getcwd(), "env": os.environ.get("CASE_VALUE"), "argv": sys.argv[1:], "pid": os.getpid()}})
"""


@pytest.fixture(params=["fresh", "forked"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(measure, "_forking", False)
    if request.param == "forked":
        measure.fork_cases(["json"])
    return str(request.param)


def test_a_case_runs_in_its_directory_with_its_environment(mode: str, tmp_path: Path) -> None:
    script = tmp_path / "case.py"
    script.write_text(CASE.format(root=str(Path(measure.__file__).parents[1])), encoding="utf-8")
    home = tmp_path / "case-home"
    home.mkdir()
    result = measure.run_case([str(script), "ok", "--x"], env={**os.environ, "CASE_VALUE": mode}, cwd=home)
    assert result["cwd"] == str(home) and result["env"] == mode and result["argv"] == ["ok", "--x"]
    assert result["pid"] != os.getpid() and Path.cwd() != home and os.environ.get("CASE_VALUE") is None


def test_a_failing_case_says_why(mode: str, tmp_path: Path) -> None:
    script = tmp_path / "case.py"
    script.write_text(CASE.format(root=str(Path(measure.__file__).parents[1])), encoding="utf-8")
    with pytest.raises(RuntimeError, match=r"(?s)failed \(exit 1\).*ValueError: the case broke"):
        measure.run_case([str(script), "fail"], env=dict(os.environ), cwd=tmp_path)
    with pytest.raises(RuntimeError, match=r"(?s)failed \(exit 1\).*the case gave up"):
        measure.run_case([str(script), "exit"], env=dict(os.environ), cwd=tmp_path)
