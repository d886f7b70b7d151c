"""The trust prompt at start: a project whose own files ask for more rights than an untrusted project gets is
asked about once, showing what trusting grants; trusting applies them, anything else leaves them narrowed.
Keys typed ahead as the prompt appears — a tab or → and an enter, as when accepting a completion — never
trust: the prompt takes keys only once it has been on screen, the keyboard quiet, a moment (`settle_clock`
stands in for the time)."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest

from tests.fakellm import Reply, ToolCall
from tests.tui.deliberate import SettleClock
from tests.tui.deliberate import shown as _shown
from tests.tui.test_app import _main, _type
from tests.waiting import pilot_until
from yeetui.settings.trust import is_trusted
from yeetui.tui.app import YeetuiApp
from yeetui.tui.screens.trust import TrustScreen


def _hostile(project: Path) -> Path:
    agent = project / ".yeetui" / "agents" / "generic.yaml"
    agent.parent.mkdir(parents=True)
    agent.write_text("permissions:\n  bash: allow\n")
    return agent


async def _trust_screen(pilot) -> TrustScreen:
    """The prompt as soon as it is on top: keys pressed now are typed ahead."""
    await pilot_until(pilot, lambda: isinstance(pilot.app.screen, TrustScreen))
    return pilot.app.screen


async def _past_window(pilot, clock: SettleClock, seconds: float | None = None) -> None:
    """Once the prompt is drawn (its window counts from then), `seconds` (its window) of a quiet keyboard pass."""
    await _shown(pilot, TrustScreen)
    clock.advance(TrustScreen.SETTLE if seconds is None else seconds)


async def test_trusting_from_the_prompt_lets_the_project_files_apply(fake_env, project: Path,
                                                                     settle_clock: SettleClock) -> None:
    agent = _hostile(project)
    marker = project / "ran"
    fake_env.script(Reply(tool_calls=[ToolCall("bash", {"command": f"touch {marker}"})], when_contains="TOUCH"),
                    Reply(tool_calls=[ToolCall("complete", {"output": "done"})]))
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(110, 32)) as pilot:
        screen = await _shown(pilot, TrustScreen)  # drawn: on top is not yet composed (a loaded machine saw that)
        shown = str(screen.query_one("#trust-grants-text").render())
        assert f"{agent}, line 2: permissions.bash: allow" in shown
        assert str(project) in str(screen.query_one("#trust-project").render())
        await _past_window(pilot, settle_clock)  # looked at it a moment, keyboard quiet
        await pilot.press("tab", "enter")  # to "Trust this project", then enter
        await _main(pilot)
        assert is_trusted(project)
        await _type(pilot, "TOUCH it")
        await pilot_until(pilot, marker.exists)  # bash: allow from the project's file, no permission dialog


@pytest.mark.parametrize("move", ["tab", "right"])
async def test_a_move_and_enter_typed_ahead_never_trust(fake_env, project: Path, settle_clock: SettleClock,
                                                       move: str) -> None:
    """Tab (or →) then enter, pressed at once as the prompt appears (accepting a completion in the composer):
    neither is taken, the focus stays on "Not now"; then enter, once the prompt listens, declines."""
    _hostile(project)
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(110, 32)) as pilot:
        screen = await _trust_screen(pilot)
        await pilot.press(move, "enter")
        await pilot.pause()
        assert app.screen is screen and not is_trusted(project)
        assert app.focused is screen.query_one("#not-now")
        await _past_window(pilot, settle_clock, TrustScreen.SETTLE - 0.05)  # not long enough after the last key
        await pilot.press(move, "enter")
        await pilot.pause()
        assert app.screen is screen and not is_trusted(project)
        # cast: the two `app.screen is screen` leave mypy (no strict optional) holding `screen` as None
        assert app.focused is cast(TrustScreen, screen).query_one("#not-now")
        settle_clock.advance(TrustScreen.SETTLE)
        await pilot.press("enter")
        main = await _main(pilot)
        assert not is_trusted(project)
        assert any("not trusted" in w for w in main.surface.warnings)


async def test_a_click_on_trust_as_the_prompt_appears_does_not_trust(fake_env, project: Path,
                                                                     settle_clock: SettleClock) -> None:
    _hostile(project)
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(110, 32)) as pilot:
        # The first moment there is a button on screen to click (the settle clock has not moved: the window is
        # still open).
        screen = await _shown(pilot, TrustScreen)
        assert await pilot.click("#trust")
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is screen and not is_trusted(project)
        assert app.focused is screen.query_one("#not-now")
        await _past_window(pilot, settle_clock, 60)
        assert await pilot.click("#not-now")
        await _main(pilot)
        assert not is_trusted(project)


async def test_keys_typed_ahead_never_trust_and_declining_keeps_the_files_narrowed(
        fake_env, project: Path, settle_clock: SettleClock) -> None:
    _hostile(project)
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(110, 32)) as pilot:
        screen = await _trust_screen(pilot)
        await pilot.press("t", "y", "a", "enter")  # a user typing "tya" and enter as yeetui starts
        await pilot.pause()
        assert app.screen is screen, "no key typed ahead answers the prompt"
        await _past_window(pilot, settle_clock, 60)
        await pilot.press("y", "t")  # no letter answers, even then
        await pilot.pause()
        assert app.screen is screen
        await pilot.press("escape")  # not now
        main = await _main(pilot)
        assert not is_trusted(project)
        assert any("not trusted" in w for w in main.surface.warnings)


async def test_a_project_asking_for_nothing_more_is_not_asked(fake_env, project: Path) -> None:
    narrowing = project / ".yeetui" / "agents" / "generic.yaml"
    narrowing.parent.mkdir(parents=True)
    narrowing.write_text("permissions:\n  bash: deny\n")
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(110, 32)) as pilot:
        await _main(pilot)  # (a trust prompt would stand in its way: nothing here answers one)
        assert not any(isinstance(s, TrustScreen) for s in app.screen_stack)
        assert not is_trusted(project)


async def test_a_file_written_while_the_prompt_is_open_is_not_trusted_unseen(fake_env, project: Path,
                                                                             settle_clock: SettleClock) -> None:
    """Trust pins the files as they were when the prompt listed what trusting grants: an agent file written
    meanwhile (by another yeetui's agent, say) leaves the project untrusted."""
    _hostile(project)
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(110, 32)) as pilot:
        await _trust_screen(pilot)
        (project / ".yeetui" / "agents" / "oracle.yaml").write_text("permissions:\n  bash: allow\n")
        await _past_window(pilot, settle_clock)
        await pilot.press("tab", "enter")
        await _main(pilot)
        assert not is_trusted(project)
