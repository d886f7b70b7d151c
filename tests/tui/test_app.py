"""The whole app under Pilot against the fake LLM server: the everyday moves of a user."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import cast

from textual import events

from tests.fakellm import Fault, Reply, ToolCall
from tests.waiting import pilot_until
from yeetui.tui.app import StartingScreen, YeetuiApp
from yeetui.tui.screens.main import MainScreen
from yeetui.tui.widgets.composer import Composer, ComposerInput
from yeetui.tui.widgets.conversation import ConversationView


async def _main(pilot, timeout: float = 60.0) -> MainScreen:
    """The main screen once its session is open (a loaded machine may take seconds to boot: waited for, by the
    clock, up to `timeout`)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if isinstance(pilot.app.screen, MainScreen) and pilot.app.screen.current:
            return pilot.app.screen
        await pilot.pause(0.05)
    raise AssertionError(f"main screen never appeared: {pilot.app.screen}")


async def _type(pilot, text: str) -> None:
    composer = pilot.app.screen.query_one(Composer)
    composer.text = text
    composer.focus()
    await pilot.press("enter")


def _text(widget) -> str:
    """The text the widget and its descendants show (Markdown as its source)."""
    from yeetui.tui.widgets.markdown_text import MarkdownBlocks, RenderedMarkdown

    def one(w) -> str:
        content = getattr(w, "content", None)
        if isinstance(content, RenderedMarkdown | MarkdownBlocks):
            return content.text
        return str(w.render()) if hasattr(w, "render") else ""

    return "\n".join(one(w) for w in widget.query("*"))


async def test_prompt_streams_an_answer(fake_env, project: Path) -> None:
    fake_env.script(Reply(text="Hello **there**, friend."))
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(100, 30)) as pilot:
        main = await _main(pilot)
        await _type(pilot, "say hello")
        view = main.query_one(ConversationView)
        await pilot_until(pilot, lambda: "friend" in _text(view))
        assert "say hello" in _text(view)


async def test_oracle_scenario(fake_env, project: Path) -> None:
    from yeetui.tui.widgets.inbox import InboxPanel
    from yeetui.tui.widgets.ledger import LedgerPanel

    fake_env.script(
        Reply(text="Reading the test. " * 10, chunk_size=6, chunk_delay=0.03,
              tool_calls=[ToolCall("complete", {"output": "ORACLE-VERDICT: the login test sleeps on a timer."})]),
    )
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(120, 32)) as pilot:
        main = await _main(pilot)
        await _type(pilot, "/oracle why does the login test flake?")
        ledger = main.query_one(LedgerPanel)
        await pilot_until(pilot, lambda: any("oracle#1 running" in str(ledger.get_option_at_index(i).prompt)
                                        for i in range(ledger.option_count)))
        inbox = main.query_one(InboxPanel)
        await pilot_until(pilot, lambda: inbox.unread == 1)
        view = main.query_one(ConversationView)
        await pilot_until(pilot, lambda: "ORACLE-VERDICT" in _text(view))
        assert "[Subagent: oracle#1]" in _text(view) or "oracle#1" in _text(view)
        primary = fake_env.requests  # only the oracle talked to the model: the primary was never called
        assert all("why does the login test flake" in r.text for r in primary)


async def test_unknown_command_and_bad_input_keep_the_app_usable(fake_env, project: Path) -> None:
    fake_env.script(Reply(text="partial answ", fault=Fault.http(400)),
                    Reply(text="second try works"))
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(100, 30)) as pilot:
        main = await _main(pilot)
        await _type(pilot, "/oracel what?")
        view = main.query_one(ConversationView)
        await pilot_until(pilot, lambda: "Unknown command /oracel" in _text(view))
        assert "/oracle" in _text(view)
        await _type(pilot, "first question")
        await pilot_until(pilot, lambda: "400" in _text(view))
        await _type(pilot, "second question")
        await pilot_until(pilot, lambda: "second try works" in _text(view))
        await pilot.resize_terminal(60, 20)
        await pilot.pause(0.2)
        await _type(pilot, "/help")
        await pilot_until(pilot, lambda: type(pilot.app.screen).__name__ == "HelpScreen")
        await pilot.press("escape")


async def test_permission_modal_deny_reaches_the_child(fake_env, project: Path) -> None:
    from yeetui.tui.screens.permission import PermissionScreen

    fake_env.script(
        Reply(tool_calls=[ToolCall("bash", {"command": "rm -rf build"})], when_contains="CLEAN-UP"),
        Reply(tool_calls=[ToolCall("complete", {"output": "could not clean"})], when_contains="denied"),
    )
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(100, 30)) as pilot:
        await _main(pilot)
        await _type(pilot, "@generic CLEAN-UP the build dir")
        await pilot_until(pilot, lambda: isinstance(pilot.app.screen, PermissionScreen))
        shown = _text(pilot.app.screen)
        assert "generic#" in shown and "rm -rf build" in shown
        await pilot.press("n")
        await pilot_until(pilot, lambda: any("could not clean" in r.text or "denied" in r.text
                                        for r in fake_env.requests[1:]))
        assert "denied" in fake_env.requests[-1].text
        assert isinstance(pilot.app.screen, MainScreen)


# -- start-up: the first screen takes keys before the session is open ------------------------------------


class GatedApp(YeetuiApp):
    """The real app whose boot waits for `gate` (only the timing is controlled): the starting screen stays
    up until the test opens it. With `burst`, keys are in flight just as the main screen takes over."""

    def __init__(self, *, burst: str = "", **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.gate = asyncio.Event()
        self.burst = burst

    async def _boot(self) -> None:
        await self.gate.wait()
        await super()._boot()

    async def handover(self) -> None:
        half = len(self.burst) // 2
        if isinstance(self.screen, StartingScreen):
            area = cast(StartingScreen, self.screen).query_one(ComposerInput)
            for char in self.burst[:half]:  # dispatched to the starting composer, not yet handled by it
                area.post_message(events.Key(char, char))
        for char in self.burst[half:]:  # not yet dispatched by the app
            self._driver.send_message(events.Key(char, char))
        await super().handover()


async def _starting(pilot) -> StartingScreen:
    await pilot_until(pilot, lambda: isinstance(pilot.app.screen, StartingScreen))
    return pilot.app.screen


async def test_keys_typed_during_start_up_carry_into_the_main_composer(fake_env, project: Path) -> None:
    app = GatedApp(cwd=project, burst="ABCDEF")
    async with app.run_test(size=(110, 30)) as pilot:
        starting = await _starting(pilot)
        assert "loading session" in _text(starting)
        await pilot.press(*"hello wrld", "left", "left", "left")
        await pilot.press("o")  # the cursor moved: "wo|rld"
        assert isinstance(pilot.app.screen, StartingScreen), "the main screen came up before the gate opened"
        assert starting.query_one(Composer).text == "hello world"
        app.gate.set()
        main = await _main(pilot)
        composer = main.query_one(Composer)
        # The cursor came along: the burst (in flight during the handover) went in after "wo", in order.
        assert composer.text == "hello woABCDEFrld"
        assert composer.input.has_focus
        await pilot.press("!")
        assert composer.text == "hello woABCDEF!rld"


async def test_enter_during_start_up_sends_once_the_session_is_open(fake_env, project: Path) -> None:
    from yeetui.tui.widgets.inbox import InboxPanel

    fake_env.script(Reply(text="Queued and answered."))
    app = GatedApp(cwd=project)
    async with app.run_test(size=(110, 30)) as pilot:
        starting = await _starting(pilot)
        await pilot.press(*"say hello", "enter")
        await pilot.press("ctrl+b")  # a main-screen action during start-up waits its turn too
        await pilot.press(*"draft")
        assert "1 queued" in _text(starting) and "› say hello" in _text(starting)
        assert fake_env.requests == []
        app.gate.set()
        main = await _main(pilot)
        view = main.query_one(ConversationView)
        await pilot_until(pilot, lambda: "Queued and answered." in _text(view))
        assert "say hello" in _text(view)
        assert [r for r in fake_env.requests if "say hello" in r.text] == fake_env.requests
        assert len(fake_env.requests) == 1, "the queued message was sent more than once"
        assert main.query_one(Composer).text == "draft"
        assert not main.query_one(InboxPanel).display
        assert main.ready and not app.pending


async def test_a_command_queued_during_start_up_leaves_no_queued_hint_behind(fake_env, project: Path) -> None:
    app = GatedApp(cwd=project)
    async with app.run_test(size=(110, 30)) as pilot:
        starting = await _starting(pilot)
        await pilot.press(*"/agents", "enter")
        assert "1 queued" in _text(starting)
        app.gate.set()
        main = await _main(pilot)
        await pilot_until(pilot, lambda: main.ready and "Agent profiles:" in _text(main.query_one(ConversationView)))
        assert "queued" not in str(main.query_one("#composer-hint").render())


async def test_a_modal_open_during_start_up_delays_the_handover_until_it_closes(fake_env, project: Path) -> None:
    from textual.command import CommandPalette

    app = GatedApp(cwd=project)
    async with app.run_test(size=(110, 30)) as pilot:
        await _starting(pilot)
        await pilot.press(*"typed first", "ctrl+p")
        await pilot_until(pilot, lambda: isinstance(pilot.app.screen, CommandPalette))
        app.gate.set()
        await pilot_until(pilot, lambda: app.surface is not None)
        await pilot.pause(0.3)
        assert isinstance(pilot.app.screen, CommandPalette), "the main screen replaced the open palette"
        await pilot.press("escape")
        main = await _main(pilot)
        assert main.query_one(Composer).text == "typed first"


async def test_the_config_theme_applies_once_the_runtime_is_open(project: Path, isolated_env: Path) -> None:
    (isolated_env / "config" / "config.yaml").write_text("theme: yeetui-light\n", encoding="utf-8")
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(100, 30)) as pilot:
        await _main(pilot)
        assert app.theme == "yeetui-light"


async def test_taken_down_while_the_session_opens_it_leaves_quietly(project: Path, monkeypatch) -> None:
    """The app is taken down just as the conversation appears (a Pilot test ends there), while start-up awaits
    the store with notices still to show (here: no key for the provider). Textual removes the screen's widgets
    before it stops the screen's workers: start-up may run on in between, the conversation gone. Its notices
    are dropped, not a crash. (Forced: start-up's store read returns in that moment, by its own clock.)"""
    opened = MainScreen.refresh_header
    shown = asyncio.Event()

    async def answered_while_taken_down(screen: MainScreen) -> None:
        await opened(screen)
        selector = f"#conv-{screen.current}"
        shown.set()
        try:
            for _ in range(30_000):  # each look at the DOM a few ms apart, up to a minute
                if not screen.query(selector):
                    break
                await asyncio.sleep(0.002)
        except asyncio.CancelledError:  # the screen's workers stopped: the read had already returned
            asyncio.current_task().uncancel()  # type: ignore[union-attr]
        assert not screen.query(selector)

    monkeypatch.setattr(MainScreen, "refresh_header", answered_while_taken_down)
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(100, 30)):
        await asyncio.wait_for(shown.wait(), 60)


async def test_a_broken_config_file_is_named_on_the_starting_screen(project: Path, isolated_env: Path) -> None:
    config = isolated_env / "config" / "config.yaml"
    config.write_text("model: [unclosed\n", encoding="utf-8")
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot_until(pilot, lambda: app.boot_error is not None)
        await pilot.press(*"hi", "enter", "f2")
        shown = _text(pilot.app.screen)
        assert isinstance(pilot.app.screen, StartingScreen)
        assert "could not start" in shown and str(config) in shown.replace("\n", "")
        assert app.pending == []


async def test_the_logging_set_up_runs_once_in_the_boot_before_the_runtime_opens(fake_env, project: Path) -> None:
    """`yeetui` hands its logging set-up to the app, whose boot worker runs it after the first frame."""
    import threading

    calls: list[tuple[str, bool]] = []

    def setup_logging() -> None:
        calls.append((threading.current_thread().name, app.surface is None))

    app = YeetuiApp(cwd=project, setup_logging=setup_logging)
    async with app.run_test(size=(100, 30)) as pilot:
        await _main(pilot)
    assert len(calls) == 1
    thread, before_runtime = calls[0]
    assert thread != threading.main_thread().name and before_runtime


def test_the_start_path_imports_no_domain_module() -> None:
    """What the first frame needs (`yeetui` alone: the CLI, its logging set-up and yeetui.tui.app) loads no
    pydantic, runtime, store, provider SDK nor the warm-start machinery: those come after it, in the boot worker
    (or only for a worker's command)."""
    code = ("import sys, yeetui.cli, yeetui.cli.common, yeetui.tui.app; "
            "print(' '.join(m for m in ('pydantic', 'yeetui.runtime', 'yeetui.store', 'yeetui.messages', "
            "'yeetui.application.runs', 'yeetui.system.warm', 'yeetui.redact', 'regex', 'anthropic', 'litellm', "
            "'jsonschema') "
            "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.strip() == ""


def test_the_main_screen_leaves_the_terminal_emulator_and_markdown_for_later() -> None:
    """What only an embedded pane (pyte) or a first answer (the Markdown parser, Rich's renderer, Pygments)
    needs is not imported before the session opens."""
    code = ("import sys, yeetui.tui.screens.main; "
            "print(' '.join(m for m in ('pyte', 'wcwidth', 'markdown_it', 'rich.markdown', 'pygments') "
            "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.strip() == ""


def test_starting_up_runs_no_command_before_the_runtime_opens() -> None:
    """Importing what the first frame and then the main screen need starts no process (libraries have run
    `ldconfig -p` and `file` on the interpreter as they loaded): each is a fork of the whole app on the way to
    the session."""
    code = ("import sys; started = []; "
            "sys.addaudithook(lambda event, args: started.append(args[0]) if event == 'subprocess.Popen' else None); "
            "import yeetui.cli, yeetui.cli.common, yeetui.tui.app, yeetui.runtime, yeetui.tui.screens.main; "
            "print(' '.join(map(str, started)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.strip() == ""


async def test_page_up_and_down_scroll_the_conversation_while_the_composer_keeps_the_draft(
        fake_env, project: Path) -> None:
    from yeetui.messages import Message
    from yeetui.runtime import Runtime

    runtime = await Runtime.open(cwd=project)
    session = await runtime.store.create_session(profile="generic", cwd=str(project))
    for i in range(40):
        await runtime.store.append_message(session.id, Message.user(f"question {i}"))
        await runtime.store.append_message(session.id, Message.assistant(f"answer {i}\n\n" + "line\n\n" * 6))
    await runtime.close()
    app = YeetuiApp(cwd=project, resume=session.id)
    async with app.run_test(size=(100, 30)) as pilot:
        main = await _main(pilot)
        view = main.view()
        await pilot_until(pilot, lambda: view.max_scroll_y > 0 and view.scroll_y == view.max_scroll_y)
        main.query_one(Composer).focus()
        await pilot.press(*"draft")
        page = view.scrollable_content_region.height
        await pilot.press("pageup")  # older messages may be paged in above meanwhile: measure from the end
        await pilot_until(pilot, lambda: view.max_scroll_y - view.scroll_y >= page // 2)
        composer = main.query_one(Composer)
        assert composer.text == "draft" and isinstance(pilot.app.focused, ComposerInput)
        await pilot.press("pagedown")
        await pilot_until(pilot, lambda: view.scroll_y == view.max_scroll_y)


async def test_home_and_end_jump_to_either_end_of_a_long_conversation_whatever_has_the_focus(
        fake_env, project: Path) -> None:
    from yeetui.messages import Message
    from yeetui.runtime import Runtime
    from yeetui.tui.widgets.ledger import LedgerPanel
    from yeetui.tui.widgets.message_views import AssistantMessageView, UserMessageView

    runtime = await Runtime.open(cwd=project)
    session = await runtime.store.create_session(profile="generic", cwd=str(project))
    for i in range(300):  # 600 messages: the first is six pages back
        await runtime.store.append_message(session.id, Message.user(f"question {i}"))
        await runtime.store.append_message(session.id, Message.assistant(f"answer {i}\n\nline\n\nline"))
    await runtime.close()
    app = YeetuiApp(cwd=project, resume=session.id)

    def first_shown(view) -> str:
        users = [e for e in view.entries if isinstance(e, UserMessageView) and e.region.overlaps(view.region)]
        return users[0].text if users else ""

    async with app.run_test(size=(100, 30)) as pilot:
        main = await _main(pilot)
        view = main.view()
        composer = main.query_one(Composer)
        await pilot_until(pilot, lambda: view.max_scroll_y > 0 and view.scroll_y == view.max_scroll_y)
        composer.focus()
        await pilot.press("home")  # the composer is empty: the conversation jumps
        await pilot_until(pilot, lambda: first_shown(view) == "question 0" and view.scroll_y == 0)
        await pilot.press("end")
        await pilot_until(pilot, lambda: view.following
                          and "answer 299" in cast(AssistantMessageView, view.entries[-1]).text)

        held: list[str] = []

        async def draw() -> None:
            held.append(composer.text)

        main.pacing.hold(draw)  # a stream's draw that fell due while the user typed
        before = time.monotonic()
        await pilot.press(*"draft", "home")  # with a draft, Home moves its cursor
        await pilot.pause()
        assert main.pacing.typed_since(before)  # keys in the composer: streams drawn less often meanwhile
        assert held == ["d"]  # the held draw ran once, after the next key's echo
        assert composer.input.cursor_location == (0, 0) and view.following
        await pilot.press("ctrl+home")  # ctrl+home jumps all the same, and the draft stays
        await pilot_until(pilot, lambda: first_shown(view) == "question 0")
        assert composer.text == "draft" and isinstance(pilot.app.focused, ComposerInput)

        main.query_one(LedgerPanel).focus()  # another panel has the focus
        await pilot.press("ctrl+end")
        await pilot_until(pilot, lambda: view.following
                          and "answer 299" in cast(AssistantMessageView, view.entries[-1]).text)
        await pilot.press("home")
        await pilot_until(pilot, lambda: first_shown(view) == "question 0")


async def test_model_refuses_a_provider_without_a_key(fake_env, project: Path, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(100, 30)) as pilot:
        main = await _main(pilot)
        before = main.model
        await _type(pilot, "/model openai/gpt-5")
        view = main.query_one(ConversationView)
        await pilot_until(pilot, lambda: "No OpenAI API key" in _text(view))
        assert "OPENAI_API_KEY" in _text(view) and main.model == before
        await _type(pilot, "/model anthropic/claude-opus-4-5")  # a provider with a key is accepted
        await pilot_until(pilot, lambda: main.model == "anthropic/claude-opus-4-5")


async def test_an_oracle_right_after_model_runs_on_the_chosen_provider(fake_env, project: Path) -> None:
    """`/model openai/gpt-5` then `/oracle …`, before the conversation has had a turn on the new model: the
    oracle's strong tier resolves for OpenAI (it ran on claude-opus-4-5, the session's model of the store)."""
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "ORACLE-VERDICT: fine."})]))
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(100, 30)) as pilot:
        main = await _main(pilot)
        await _type(pilot, "/model openai/gpt-5")
        await pilot_until(pilot, lambda: main.model == "openai/gpt-5")
        await _type(pilot, "/oracle why is CI slow?")
        view = main.query_one(ConversationView)
        await pilot_until(pilot, lambda: "ORACLE-VERDICT" in _text(view))
        asked = [(r.api, r.body["model"]) for r in fake_env.requests if "why is CI slow" in r.text]
        assert asked == [("openai", "gpt-5.1")]


async def test_a_retry_is_shown_in_the_conversation_and_the_ledger(fake_env, project: Path,
                                                                   monkeypatch) -> None:
    monkeypatch.setenv("YEETUI_RETRY__BASE_DELAY", "0.3")
    fake_env.script(Reply.error(529), Reply(text="answered after a retry"))
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(110, 30)) as pilot:
        main = await _main(pilot)
        await _type(pilot, "hello")
        view = main.query_one(ConversationView)
        await pilot_until(pilot, lambda: "retrying (2/5) in" in _text(view) and "overloaded" in _text(view))
        await pilot_until(pilot, lambda: "answered after a retry" in _text(view))


async def test_ctrl_c_stops_a_streaming_answer_then_twice_quits(fake_env, project: Path) -> None:
    fake_env.script(Reply(text="long " * 400, chunk_size=4, chunk_delay=0.02))
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(100, 30)) as pilot:
        main = await _main(pilot)
        await _type(pilot, "talk")
        control = main.controls[main.current]
        await pilot_until(pilot, lambda: control.busy and "long long" in _text(main.query_one(ConversationView)))
        await pilot.press("ctrl+c")
        await pilot_until(pilot, lambda: not control.busy)
        assert app.is_running  # stopping the answer is not quitting
        await pilot.press("ctrl+c")
        await pilot.pause(0.1)
        assert app.is_running  # one ctrl+c with nothing running only says how to quit
        await pilot.press("ctrl+c")
        await pilot_until(pilot, lambda: not app.is_running)


async def test_a_mentioned_file_goes_with_the_prompt_and_the_user_sees_it(fake_env, project: Path) -> None:
    from yeetui.tui.widgets.message_views import UserMessageView

    (project / "calc.py").write_text("def add(a, b):\n    return a + b  # CALC-BODY\n")
    (project.parent / "outside.txt").write_text("OUTSIDE-SECRET\n")
    fake_env.script(Reply(text="It adds."))
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(110, 30)) as pilot:
        main = await _main(pilot)
        await _type(pilot, "what does @calc.py do? see also @../outside.txt")
        view = main.query_one(ConversationView)
        await pilot_until(pilot, lambda: "It adds." in _text(view))
        [sent] = fake_env.requests
        assert "CALC-BODY" in sent.text and "OUTSIDE-SECRET" not in sent.text
        [shown] = view.query(UserMessageView)
        assert "📎 attached calc.py (2 lines)" in str(shown.render())
        assert "CALC-BODY" not in _text(view), "the transcript shows the note, not the file"
        assert "@../outside.txt is not attached: it leads outside the project" in _text(view)


async def test_theme_says_it_applied_and_theme_and_model_alone_open_pickers(fake_env, project: Path,
                                                                           monkeypatch) -> None:
    from textual.widgets import OptionList

    from yeetui.tui.screens.picker import PickerScreen

    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(110, 36)) as pilot:
        main = await _main(pilot)
        view = main.query_one(ConversationView)
        await _type(pilot, "/theme yeetui-light")
        await pilot_until(pilot, lambda: "Theme set to yeetui-light" in _text(view))
        assert app.theme == "yeetui-light"

        await _type(pilot, "/theme")
        await pilot_until(pilot, lambda: isinstance(app.screen, PickerScreen))
        themes = [o.id for o in app.screen.query_one(OptionList).options]
        assert "yeetui-dark" in themes and "yeetui-light" in themes
        assert app.screen.query_one(OptionList).highlighted == themes.index("yeetui-light"), "starts on the current"
        app.screen.query_one(OptionList).highlighted = themes.index("yeetui-dark")
        await pilot.press("enter")
        await pilot_until(pilot, lambda: app.theme == "yeetui-dark" and "Theme set to yeetui-dark" in _text(view))

        await _type(pilot, "/model")
        await pilot_until(pilot, lambda: isinstance(app.screen, PickerScreen))
        models = [o.id for o in app.screen.query_one(OptionList).options]
        assert "anthropic/claude-opus-4-5" in models and "openai/gpt-5-mini" in models
        assert not any(m.startswith("gemini/") for m in models), "no key, not listed"
        await pilot.press("escape")
        await pilot_until(pilot, lambda: isinstance(app.screen, MainScreen))
        await _type(pilot, "/model")
        await pilot_until(pilot, lambda: isinstance(app.screen, PickerScreen))
        app.screen.query_one(OptionList).highlighted = models.index("openai/gpt-5-mini")
        await pilot.press("enter")
        await pilot_until(pilot, lambda: main.model == "openai/gpt-5-mini")
        assert "Model set to openai/gpt-5-mini" in _text(view)


async def test_agents_lists_one_line_per_profile_cut_after_a_whole_word(fake_env, project: Path) -> None:
    from yeetui.tui.widgets.message_views import NoticeView

    for size in ((80, 24), (130, 30)):
        app = YeetuiApp(cwd=project)
        async with app.run_test(size=size) as pilot:
            main = await _main(pilot)
            await _type(pilot, "/agents")
            view = main.query_one(ConversationView)

            def profiles_shown(view: ConversationView = view) -> bool:
                return any("Agent profiles" in str(n.render()) for n in view.query(NoticeView))

            await pilot_until(pilot, profiles_shown)
            [notice] = [n for n in view.query(NoticeView) if "Agent profiles" in str(n.render())]
            await pilot.pause()
            text = str(notice.render())
            profiles = app.surface.profiles.profiles
            assert notice.size.height == len(text.splitlines()) == 1 + len(profiles), f"wrapped at {size}"
            for line in text.splitlines()[1:]:
                name = line.split()[0]
                description = " ".join(profiles[name].description.split())
                shown = line.split("  ")[-1].strip()
                if shown.endswith("…"):
                    kept = shown[:-1]
                    assert description.startswith(kept) and description[len(kept)] in " ,.;-", (size, line)
                else:
                    assert shown == description


async def test_the_project_instruction_files_read_are_named_and_reach_the_model(fake_env, project: Path) -> None:
    (project / "AGENTS.md").write_text("Always run AGENTS-RULE-42 before committing.\n")
    (project / "CLAUDE.md").write_text("Prefer CLAUDE-RULE-7.\n")
    fake_env.script(Reply(text="noted"))
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(100, 30)) as pilot:
        main = await _main(pilot)
        view = main.query_one(ConversationView)
        await pilot_until(pilot, lambda: "Project instructions from AGENTS.md and CLAUDE.md" in _text(view))
        await _type(pilot, "hello")
        await pilot_until(pilot, lambda: "noted" in _text(view))
    sent = fake_env.requests[-1].text
    assert "AGENTS-RULE-42" in sent and "CLAUDE-RULE-7" in sent


async def test_claude_command_files_are_slash_commands_sent_only_as_prompts(fake_env, project: Path) -> None:
    commands = project / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "fix-issue.md").write_text("---\ndescription: Fix an issue\n---\nFix issue #$ARGUMENTS now.\n")
    (commands / "review.md").write_text("Review MY-WAY.\n")
    (commands / "sneaky.md").write_text(f"!touch {project / 'PWNED'}\n")
    fake_env.script(Reply(text="on it", when_contains="Fix issue #123 now."),
                    Reply(text="reviewed", when_contains="Review MY-WAY."),
                    Reply(text="just text", when_contains="PWNED"))
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(120, 30)) as pilot:
        main = await _main(pilot)
        view = main.query_one(ConversationView)
        await pilot_until(pilot, lambda: "it is /claude:review" in _text(view))  # /review keeps its meaning
        await _type(pilot, "/fix-issue 123")
        await pilot_until(pilot, lambda: "on it" in _text(view))
        await _type(pilot, "/claude:review")
        await pilot_until(pilot, lambda: "reviewed" in _text(view))
        await _type(pilot, "/sneaky")
        await pilot_until(pilot, lambda: "just text" in _text(view))
        assert not (project / "PWNED").exists()  # a `!` body is a prompt, never a shell line
        assert any(c.name == "fix-issue" and "Fix an issue (commands/fix-issue.md)" in c.help for c in main.commands)


async def test_esc_with_only_subagents_running_names_them_and_a_second_esc_stops_them(
        fake_env, project: Path, monkeypatch) -> None:
    """Issue 24, item 9: esc when nothing runs in the conversation but its subagents do says so (today:
    nothing happens), a second esc stops them; ctrl+q says on the terminal which subagents quitting stopped."""
    from yeetui.events import RunStatus
    from yeetui.tui.screens import main as main_screen
    from yeetui.tui.widgets.message_views import NoticeView

    monkeypatch.setattr(main_screen, "SECOND_ESC", 600.0)  # a loaded machine may take seconds between the keys
    fake_env.script(*[Reply(text="Thinking hard. " * 400, chunk_size=30, chunk_delay=1.0, when_contains=question)
                      for question in ("why is it slow", "and now")])
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(120, 32)) as pilot:
        main = await _main(pilot)
        await _type(pilot, "/oracle why is it slow?")
        spawner = main.surface.runtime.spawner
        await pilot_until(pilot, lambda: bool(spawner.live_runs(main.current)))
        [child] = spawner.live_runs(main.current)
        view = main.query_one(ConversationView)
        await pilot.press("escape")
        await pilot_until(pilot, lambda: "run in the background: oracle#1" in _text(view))
        assert spawner.is_live(child)  # named, not stopped
        await pilot.press("escape")
        await pilot_until(pilot, lambda: not spawner.is_live(child))
        run = await main.surface.store.get_run(child)
        assert run.status in (RunStatus.CANCELLED, RunStatus.FAILED, RunStatus.INTERRUPTED)
        assert any("Stopping oracle#1" in str(n.render()) for n in view.query(NoticeView))

        await _type(pilot, "/oracle and now?")
        await pilot_until(pilot, lambda: bool(spawner.live_runs()))
        await pilot.press("ctrl+q")
    assert app.exit_note is not None and "stopped 1 running subagent" in app.exit_note and "oracle#2" in app.exit_note


async def test_a_subagent_with_a_budget_shows_its_spend_and_is_halted_at_it(fake_env, project: Path) -> None:
    """`/oracle --max-turns 3 …`: the ledger row shows the spend against the budget, the oracle is halted at
    it (`budget exhausted`), and the user's inbox says so; a mistyped budget flag starts nothing and says why."""
    from yeetui.subagents.ledger import LedgerRow
    from yeetui.tui.widgets.inbox import InboxPanel
    from yeetui.tui.widgets.ledger import LedgerPanel, row_content

    fake_env.script(Reply(text="Looking again.", tool_calls=[ToolCall("list_dir", {"path": "."})], repeat=True,
                          chunk_size=4, chunk_delay=0.02))
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(140, 32)) as pilot:
        main = await _main(pilot)
        view = main.query_one(ConversationView)
        await _type(pilot, "/oracle --max-turns many why?")
        await pilot_until(pilot, lambda: "--max-turns needs a positive whole number, not 'many'" in _text(view))
        assert not fake_env.requests
        ledger = main.query_one(LedgerPanel)
        seen: list[str] = []  # every row the panel is given to draw: no state is missed however fast it runs
        update_row = ledger.update_row

        def recording(run_id: str, row: LedgerRow | None) -> None:
            if row is not None:
                seen.append(row_content(row, 0).plain)
            update_row(run_id, row)

        ledger.update_row = recording  # type: ignore[method-assign]
        await _type(pilot, "/oracle --max-turns 3 why does it loop?")
        await pilot_until(pilot, lambda: any("oracle#1 budget exhausted" in r for r in seen), timeout=30)
        assert any("budget 1/3 turns" in r or "budget 2/3 turns" in r for r in seen), seen[-3:]
        inbox = main.query_one(InboxPanel)
        # one item tells of the halt: the oracle's ending (no budget item besides it)
        await pilot_until(pilot, lambda: any(i.title.startswith("oracle#1") for i in inbox.items.values()))
        [told] = [i for i in inbox.items.values() if i.title.startswith("oracle#1")]
        assert "budget" in told.title and told.kind == "completion", told
        assert len(fake_env.requests) == 3


async def test_send_follows_up_a_finished_oracle_from_the_tui(fake_env, project: Path) -> None:
    """`/send oracle#1 …` after the oracle finished: it goes on in its own session with its earlier context and
    its new answer is announced in the conversation."""
    fake_env.script(
        Reply(tool_calls=[ToolCall("complete", {"output": "SECOND-VERDICT: the cache too"})],
              when_contains="FOLLOW-Q"),
        Reply(tool_calls=[ToolCall("complete", {"output": "FIRST-VERDICT: the timer"})]))
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(120, 32)) as pilot:
        main = await _main(pilot)
        view = main.query_one(ConversationView)
        await _type(pilot, "/oracle why does it flake?")
        await pilot_until(pilot, lambda: "FIRST-VERDICT" in _text(view), timeout=30)
        await _type(pilot, "/send oracle#1 FOLLOW-Q and the cache?")
        await pilot_until(pilot, lambda: "SECOND-VERDICT" in _text(view), timeout=30)
        follow_up = next(r for r in fake_env.requests if "FOLLOW-Q" in r.text)
        assert "why does it flake?" in follow_up.text and "FIRST-VERDICT" in follow_up.text
        await _type(pilot, "/send nobody#9 hello")
        await pilot_until(pilot, lambda: "nobody#9" in _text(view))


async def test_the_fleet_screen_lists_every_run_and_opens_one(fake_env, project: Path) -> None:
    """ctrl+g: the runs of this data dir, grouped; enter on one of this project's opens its session."""
    from textual.widgets import OptionList

    from yeetui.tui.screens.fleet import FleetScreen

    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "FLEET-ORACLE done"})]))
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(140, 32)) as pilot:
        main = await _main(pilot)
        view = main.query_one(ConversationView)
        await _type(pilot, "/oracle look at it")
        await pilot_until(pilot, lambda: "FLEET-ORACLE" in _text(view), timeout=30)
        await pilot.press("ctrl+g")
        await pilot_until(pilot, lambda: isinstance(app.screen, FleetScreen) and cast(FleetScreen, app.screen).rows)
        screen = cast(FleetScreen, app.screen)
        listing = screen.query_one(OptionList)
        shown = [str(listing.get_option_at_index(i).prompt) for i in range(listing.option_count)]
        assert shown[0].startswith("NEEDS YOU") and any(s.startswith("DONE") for s in shown)
        assert any("oracle#1" in s and "completed" in s for s in shown)
        oracle = next(r for r in screen.rows.values() if r.label == "oracle#1")
        listing.highlighted = listing.get_option_index(oracle.run_id)
        await pilot.press("enter")
        await pilot_until(pilot, lambda: isinstance(app.screen, MainScreen) and main.current == oracle.session_id)


async def test_schedule_command_adds_lists_pauses_resumes_and_removes(fake_env, project: Path) -> None:
    """/schedule is `yeetui schedule` inside the app: the same store, the same words."""
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(150, 40)) as pilot:
        main = await _main(pilot)
        view = main.query_one(ConversationView)
        await _type(pilot, '/schedule add "0 7 * * 1-5" reviewer review yesterday\'s commits')
        await pilot_until(pilot, lambda: "next at" in _text(view))
        [schedule] = await main.surface.store.schedules.all()
        assert schedule.profile == "reviewer" and schedule.prompt == "review yesterday's commits"
        assert schedule.spec == "0 7 * * 1-5" and not schedule.approve and schedule.missed == "skip"
        await _type(pilot, "/schedule add every 30m oracle look for flaky tests --yes --missed once")
        await pilot_until(pilot, lambda: len([s for s in _text(view).splitlines() if "next at" in s]) >= 2)
        every = next(s for s in await main.surface.store.schedules.all() if s.id != schedule.id)
        assert every.spec == "every 30m" and every.approve and every.missed == "once"
        assert every.prompt == "look for flaky tests"
        await _type(pilot, "/schedule")
        await pilot_until(pilot, lambda: "Schedules:" in _text(view))
        listing = _text(view).split("Schedules:")[-1]
        assert schedule.id in listing and every.id in listing and "last -" in listing
        await _type(pilot, f"/schedule pause {schedule.id}")
        await pilot_until(pilot, lambda: f"Schedule {schedule.id} paused." in _text(view))
        assert (await main.surface.store.schedules.get(schedule.id)).paused
        await _type(pilot, f"/schedule resume {schedule.id}")
        await pilot_until(pilot, lambda: f"Schedule {schedule.id} resumed" in _text(view))
        await _type(pilot, f"/schedule remove {every.id}")
        await pilot_until(pilot, lambda: f"Schedule {every.id} removed." in _text(view))
        assert [s.id for s in await main.surface.store.schedules.all()] == [schedule.id]
        # bad input: said, nothing added, the app goes on
        await _type(pilot, '/schedule add "61 * * * *" oracle never')
        await pilot_until(pilot, lambda: "61" in _text(view).split("removed.")[-1])
        await _type(pilot, "/schedule add every 30m no-such-profile hello")
        await pilot_until(pilot, lambda: "No profile 'no-such-profile'" in _text(view))
        assert len(await main.surface.store.schedules.all()) == 1


HOSTILE = ("Done.\x1b]52;c;cm0gLXJmIH4K\x07 Clipboard\x1b]0;pwned-title\x1b\\ set.\x1b[2J\x1b[H"
           "\rOVERWRITTEN\x9b31m end")


async def test_an_answer_s_escape_sequences_never_reach_the_terminal(fake_env, project: Path) -> None:
    """A model's answer (and its echo in the prompt) may hold escape sequences: every line the app draws loses
    its control characters (no clipboard write, title change or screen clear), the printable rest stays."""
    from textual.geometry import Region
    from textual.widget import Widget

    fake_env.script(Reply(text=f"# Title\n\n{HOSTILE}\n\n- item {HOSTILE}\n\n```\ncode {HOSTILE}\n```\n\nlast"))
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(100, 40)) as pilot:
        main = await _main(pilot)
        await _type(pilot, f"say {HOSTILE}")
        view = main.query_one(ConversationView)
        await pilot_until(pilot, lambda: "last" in _text(view))
        await pilot.pause()
        drawn = "".join(segment.text for widget in main.query(Widget) if widget.size
                        for strip in widget.render_lines(Region(0, 0, *widget.size)) for segment in strip)
        assert "OVERWRITTEN31m end" in drawn and "pwned-title" in drawn  # shown, as plain text
        for control in ("\x1b", "\x07", "\r", "\x9b"):
            assert control not in drawn, f"{control!r} is drawn"
