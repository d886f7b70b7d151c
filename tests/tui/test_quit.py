"""ctrl+q while the primary agent answers (issue 24, item 6): quitting ends the turn as the user's doing —
stored as cancelled, saying yeetui quit — instead of leaving the run `running` for the next start to report
as a crash (`interrupted`, its process gone)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tests.fakellm import Reply
from tests.integration.helpers import run_yeetui
from tests.tui.test_app import _main, _text, _type
from tests.waiting import pilot_until
from yeetui.events import RunStatus
from yeetui.runtime import Runtime
from yeetui.store.runs import INTERRUPTED_ERROR
from yeetui.tui.app import YeetuiApp
from yeetui.tui.widgets.message_views import NoticeView


async def test_ctrl_q_while_the_primary_answers_ends_its_turn_as_cancelled(fake_env, project: Path) -> None:
    fake_env.script(Reply(text="slow " * 600, chunk_size=20, chunk_delay=1.0))
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(100, 30)) as pilot:
        main = await _main(pilot)
        session_id = main.current
        await _type(pilot, "TALK-SLOWLY please")
        control = main.controls[session_id]
        await pilot_until(pilot, lambda: control.busy and "slow slow" in _text(main.view()))
        await pilot.press("ctrl+q")
        await pilot_until(pilot, lambda: not app.is_running)
    assert app.exit_note is not None and "stopped the answer in progress as it quit" in app.exit_note

    runtime = await Runtime.open(cwd=project, recover=False)  # the store as quitting left it
    try:
        [run] = await runtime.store.list_runs(session_id=session_id)
        assert run.status == RunStatus.CANCELLED and run.error == "yeetui quit while it ran"
        assert run.finished_at is not None
    finally:
        await runtime.close()

    listed = await asyncio.to_thread(run_yeetui, "agents", "list", "--json", cwd=project, timeout=120)
    assert listed.returncode == 0, listed.stderr
    [shown] = [r for r in json.loads(listed.stdout) if r["id"] == run.id]
    assert shown["status"] == "cancelled"

    again = YeetuiApp(cwd=project, continue_latest=True)  # recovery runs: nothing to find
    async with again.run_test(size=(100, 30)) as pilot:
        main = await _main(pilot)
        assert main.current == session_id
        await pilot_until(pilot, lambda: "TALK-SLOWLY" in _text(main.view()))
        shown_text = _text(main.view())
        notices = [str(n.render()) for n in main.view().query(NoticeView)]
        # The cut answer reads "(interrupted)", as any cut answer does; the run is not reported as a crash.
        assert not any(INTERRUPTED_ERROR in n or "run interrupted" in n for n in [shown_text, *notices]), shown_text
        assert any("yeetui quit while it ran" in n for n in notices), notices
    runtime = await Runtime.open(cwd=project, recover=False)
    try:
        assert (await runtime.store.get_run(run.id)).status == RunStatus.CANCELLED
    finally:
        await runtime.close()
