"""The real `yeetui` binary in tmux, typed at like a user: keys only, no clicks, assertions on the screen.

Each test starts its own tmux server (see tmux.py) and, when it needs a model, the fake LLM server in this
process (`fake_env`); the fake server's request log shows what the app really sent.
"""

from __future__ import annotations

import json
import re
import subprocess
import time

from tests.e2e.tmux import flat
from tests.fakellm import Reply, ToolCall
from tests.fakellm.fixtures import KEY_MARKER
from tests.integration.helpers import run_yeetui

ORACLE_MARKER = "You are the oracle: a senior engineer consulted"
"""The first words of agents/oracle.md's system prompt."""
COMPOSER = "Message yeetui"
"""The composer's placeholder: on screen whenever the composer is (and empty)."""


_LEDGER_ROW = re.compile(r"^ ?(?:\s*└ )?[\w-]+#\d+ ")


def _ledger(screen: str) -> str:
    """The ledger rows (`oracle#1 running · …`, a subagent's indented under its parent's): the lines under the
    session header at the top of the screen that start with a label."""
    rows = []
    for line in screen.splitlines()[1:]:
        if not _LEDGER_ROW.match(line):
            break
        rows.append(line)
    return "\n".join(rows)


def test_oracle_answers_in_the_conversation_and_the_inbox(launch, fake_env) -> None:
    fake_env.script(
        Reply(text="Reading the test. " * 12, chunk_size=6, chunk_delay=0.05,
              tool_calls=[ToolCall("complete", {"output": "ORACLE-VERDICT: the login test sleeps on a timer."})]),
    )
    app = launch()
    # Typed, looked at, then Enter: text and Enter as SEPARATE send-keys calls.
    app.send("/oracle why does the login test flake?")
    app.wait_for("▊ /oracle why does the login test flake?", why="the command typed into the composer")
    app.press("Enter")
    app.wait_for(lambda s: "oracle#1 running" in _ledger(s), why="the ledger row of the running oracle")
    app.wait_for("Started oracle#1.", why="the notice that the oracle started")
    done = app.wait_for("ORACLE-VERDICT: the login test sleeps on a timer.", timeout=20,
                        why="the oracle's answer announced in the conversation")
    assert "oracle#1 · completed" in done and "Complete." in done
    inbox = app.wait_for("inbox · 1 unread", why="the inbox badge for the oracle's completion")
    assert "● ✓ oracle#1 — completed" in inbox
    app.wait_for(lambda s: "oracle#1 completed" in _ledger(s), why="the ledger row turning completed")
    assert app.screen().splitlines()[0].startswith(" primary · "), "the header names the session on screen"
    assert COMPOSER in app.screen(), "the command stayed in the composer after it was sent"
    app.send("thanks, oracle")  # the announcement and the inbox did not take the focus from the composer
    app.wait_for("▊ thanks, oracle", why="keys reaching the composer after the announcement")

    requests = fake_env.requests
    assert requests, "the oracle never called the model"
    assert all(ORACLE_MARKER in r.text for r in requests), (
        "a request without the oracle's system prompt reached the model (the primary must not be called): "
        + repr([r.text[:200] for r in requests if ORACLE_MARKER not in r.text]))
    assert "why does the login test flake?" in requests[0].text
    assert KEY_MARKER not in app.screen()


def test_burst_typed_command_is_sent_as_typed(launch, fake_env) -> None:
    """Regression: keys arriving in one burst (tmux send-keys, a fast typist, a buffering terminal) must
    reach the app whole and in order. Here each burst comes while the `/` completion popup is open: the
    text and Enter go in ONE send-keys call, and Enter must send what was typed, not a stale completion.
    Whether the app reads a burst at once depends on timing, so the move is repeated: five unknown commands
    (answered by a notice, no model), then an oracle question whose request must carry the whole text."""
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "BURST-VERDICT: all keys arrived."})]))
    app = launch()
    for n in range(1, 6):
        app.send("/")
        app.wait_for("/help  keys and commands", why="the command completion popup after `/`")
        app.send(f"nosuch{n} typed in one burst", "Enter")
        app.wait_for(f"Unknown command /nosuch{n}.", timeout=5,
                     why=f"the burst-typed `/nosuch{n} typed in one burst` + Enter being sent as typed")
        kept = f"▊ /nosuch{n} typed in one burst"
        app.wait_for(kept, timeout=5, why="the unknown command's text kept in the composer")
        app.press("C-u")  # cleared by hand before the next burst
        app.wait_for(lambda screen, kept=kept: kept not in screen, timeout=5, why="the composer cleared")
    app.send("/")
    app.wait_for("/help  keys and commands", why="the command completion popup after `/`")
    app.send("oracle why does the login test flake?", "Enter")
    app.wait_for("BURST-VERDICT: all keys arrived.", timeout=10,
                 why="the oracle started by the burst-typed `/oracle why does the login test flake?` + Enter")
    assert "why does the login test flake?" in fake_env.requests[0].text


def test_a_typed_key_is_drawn_at_once_not_at_the_screen_s_next_frame(launch, monkeypatch) -> None:
    """Textual draws a screen at most TEXTUAL_FPS times a second; here once a second. A key's echo is written
    at once all the same: each of three keys, typed right after the last one showed (drawn by the frame
    just before, had it waited for frames), shows well within the second the next frame would take."""
    monkeypatch.setenv("TEXTUAL_FPS", "1")
    app = launch()
    typed = "zq"
    app.send(typed)
    app.wait_for(typed, why="the first keys in the composer")
    waits = []
    for key in "xkw":
        typed += key
        sent = time.monotonic()
        app.send(key)
        while typed not in app.screen():
            assert time.monotonic() - sent < 5, f"{typed!r} never showed:\n{app.screen()}"
            time.sleep(0.01)
        waits.append(time.monotonic() - sent)
    assert min(waits) < 0.5, f"each key waited for the next frame (1 s apart): {waits}"


def test_f2_toggles_the_pair_watcher(launch, fake_env) -> None:
    app = launch()
    app.press("F2")
    app.wait_for(lambda s: "pair#" in _ledger(s) and "watching" in _ledger(s), why="the pair watcher row")
    app.wait_for("Pair watcher on.", why="the notice that the watcher is on")
    app.send("still typing")
    app.wait_for("▊ still typing", why="keys reaching the composer after F2")
    app.press("F2")
    off = app.wait_for("Pair watcher off.", why="the watcher switching off")
    app.wait_for(lambda s: "watching" not in _ledger(s), why="the watcher row leaving the ledger")
    assert "Pair watcher on." in off  # the first notice stays in the conversation
    assert not [r for r in fake_env.requests if r.api != "other"], "toggling the watcher called a model"


def test_prompt_streams_and_escape_interrupts(launch, fake_env) -> None:
    fake_env.script(
        Reply(text="FIRST-ANSWER " + "slowly streaming words " * 60 + "FIRST-END",
              chunk_size=4, chunk_delay=0.05, when_contains="tell me something slow"),
        Reply(text="SECOND-ANSWER arrived after the interrupt.", when_contains="and now quickly please"),
    )
    app = launch()
    # Text and Enter as SEPARATE send-keys calls, as a person typing then pressing Enter.
    app.send("tell me something slow")
    app.wait_for("tell me something slow", why="the typed text in the composer")
    app.press("Enter")
    app.wait_for("FIRST-ANSWER", why="the first tokens streaming in")
    assert "FIRST-END" not in app.screen(), "the whole answer appeared at once; it should stream"
    app.wait_for("slowly streaming words slowly", why="more of the stream")
    app.wait_for("● agent working", why="the busy hint above the composer")
    app.press("Escape")
    interrupted = app.wait_for("Interrupted.", timeout=10, why="Esc to interrupt the streaming turn")
    assert "FIRST-END" not in interrupted
    app.wait_until_gone("● agent working")
    app.send("and now quickly please", "Enter")
    app.wait_for("SECOND-ANSWER arrived after the interrupt.", why="the app answering after an interrupt")
    assert "FIRST-END" not in app.screen()
    texts = [r.text for r in fake_env.requests]
    assert len(texts) == 2, f"expected one request per prompt, got {len(texts)}"
    assert "tell me something slow" in texts[0] and "and now quickly please" in texts[1]


def test_switcher_opens_and_closes_then_ctrl_q_quits(launch, fake_env) -> None:
    app = launch()
    app.press("C-s")
    # The switcher paints over more than one frame: wait for its whole box, hint line included.
    app.wait_for(lambda screen: "+ New session" in screen and "esc close" in screen,
                 why="ctrl+s opening the session switcher, with its key hints")
    app.press("Escape")
    app.wait_until_gone("+ New session")
    # Focus is back in the composer: typing lands there.
    app.send("typed after the switcher")
    app.wait_for("typed after the switcher", why="keys reaching the composer after the switcher closed")
    app.press("C-q")
    assert app.wait_exit(timeout=10) == 0


def test_ctrl_q_while_the_primary_answers_records_the_turn_as_cancelled(launch, fake_env, project) -> None:
    """Issue 24, item 6: quitting mid-answer left the run `running`; the next start reported it interrupted
    (found running, its process gone). Now it is cancelled because yeetui quit, and `--continue` says so."""
    fake_env.script(Reply(text="QUIT-ANSWER " + "slowly streaming words " * 200, chunk_size=60, chunk_delay=1.0,
                          when_contains="talk slowly"))  # mid-answer from the first delta on, a delta a second
    app = launch()
    app.send("talk slowly")
    app.wait_for("▊ talk slowly", why="the typed text in the composer")
    app.press("Enter")
    app.wait_for("slowly streaming words slowly", why="the answer streaming in")
    app.press("C-q")
    assert app.wait_exit(timeout=15) == 0
    listed = run_yeetui("agents", "list", "--json", cwd=project)
    assert listed.returncode == 0, listed.stderr
    [run] = json.loads(listed.stdout)
    assert (run["status"], run["error"]) == ("cancelled", "yeetui quit while it ran")
    again = launch("--continue")
    again.wait_for("The run cancelled: yeetui quit while it ran", why="the restored transcript saying how it ended")
    assert "found running at start-up" not in again.screen()


def test_without_a_key_the_app_opens_and_says_how_to_configure_one(launch) -> None:
    app = launch()
    screen = app.wait_for("ANTHROPIC_API_KEY", why="the notice on how to configure a provider key")
    assert "No API key for anthropic" in flat(screen) and "/model" in flat(screen)
    app.send("hello without a key", "Enter")
    failed = app.wait_for("The run failed", why="a prompt without a key failing with a clear notice")
    assert "set ANTHROPIC_API_KEY" in flat(failed)
    assert COMPOSER in failed and not app.exited(), "the app should stay open and usable after the failure"


def test_resize_to_60x20_redraws_and_keeps_the_composer(launch, fake_env) -> None:
    fake_env.script(Reply(text="NARROW-ANSWER fits in a small window."))
    app = launch()
    app.wait_for("inbox", why="the inbox panel at full width")
    app.resize(60, 20)
    small = app.wait_for(lambda s: len(s.splitlines()) <= 20 and COMPOSER in s and "inbox" not in s,
                         why="a 60×20 redraw with the composer and the inbox collapsed")
    assert max(len(line) for line in small.splitlines()) <= 60
    assert not app.exited()
    app.send("hello from a small window", "Enter")
    app.wait_for("NARROW-ANSWER fits", why="a prompt answered at 60×20")
    app.resize(110, 32)
    app.wait_for(lambda s: "inbox" in s and COMPOSER in s, why="the inbox coming back at full width")




def test_orchestrate_two_builders_in_parallel_worktrees_then_merge(launch, fake_env, project) -> None:
    """`/orchestrate` with two independent builder steps: they run at once, each in a worktree of its own;
    the user's checkout and branch stay as they were until the user merges; then the branch holds both."""

    def git(*args: str) -> str:
        return subprocess.run(["git", "-c", "user.name=T", "-c", "user.email=t@e.st", *args], cwd=project,
                              check=True, capture_output=True, text=True).stdout

    git("init", "-q", "-b", "main")
    git("add", ".")
    git("commit", "-q", "-m", "init")
    head = git("rev-parse", "HEAD")
    plan = {"steps": [
        {"id": "a", "profile": "builder", "task": "BUILD-A: write a.py", "depends_on": []},
        {"id": "b", "profile": "builder", "task": "BUILD-B: write b.py", "depends_on": []},
        {"id": "check", "profile": "reviewer", "task": "Review both.", "depends_on": ["a", "b"]},
    ]}
    fake_env.script(
        Reply(tool_calls=[ToolCall("complete", {"output": "Two files, then a review.", "artifacts": plan})],
              when_contains="You are the planner."),
        # Each builder's first answer waits until both builders have asked (the planner's request, then theirs):
        # run one after the other, the second would never ask and the first would never finish.
        *[Reply(text="Writing it. " * 10, chunk_size=4, chunk_delay=0.05, when_contains=f"BUILD-{x}", after_requests=3,
                tool_calls=[ToolCall("write_file", {"path": f"{x.lower()}.py", "content": f"WHO = '{x}'\n"})])
          for x in "AB"],
        *[Reply(tool_calls=[ToolCall("complete", {"output": f"REPORT-{x}", "files_modified": [f"{x.lower()}.py"]})],
                when_contains=f"BUILD-{x}") for x in "AB"],
        Reply(tool_calls=[ToolCall("complete", {"output": "Both fine.",
                                                "artifacts": {"verdict": "approve", "findings": []}})],
              when_contains="You are a code reviewer."),
    )
    app = launch(width=140, height=45)
    app.send("/orchestrate add a.py and b.py")
    app.wait_for("▊ /orchestrate add a.py and b.py", why="the command typed")
    app.press("Enter")
    app.wait_for("Work to merge", timeout=60, why="the orchestrator's report listing the branches to merge")
    firsts = [next(r for r in fake_env.requests if f"BUILD-{x}" in r.text) for x in "AB"]
    assert firsts[0].started < firsts[1].finished and firsts[1].started < firsts[0].finished, "not in parallel"
    assert git("rev-parse", "HEAD") == head and not (project / "a.py").exists() and not (project / "b.py").exists()
    assert git("status", "--porcelain") == ""
    assert len(git("worktree", "list").splitlines()) == 3

    for label in ("builder#1", "builder#2"):
        app.send(f"/merge {label}")
        app.wait_for(f"▊ /merge {label}", why="the merge command typed")
        app.press("Enter")
        # It asks first, and listens only once it has been on screen a moment (it says so in its border).
        app.wait_for(lambda s, label=label: f"Merge {label} into your branch?" in flat(s) and "esc no" in flat(s),
                     why="the merge confirmation, listening")
        app.press("Tab")
        app.press("Enter")
        app.wait_for(lambda s, label=label: flat(s).count("merged into main") >= int(label[-1]), timeout=30,
                     why=f"{label}'s branch merged")
    assert (project / "a.py").read_text() == "WHO = 'A'\n" and (project / "b.py").read_text() == "WHO = 'B'\n"
    assert git("symbolic-ref", "--short", "HEAD").strip() == "main"
    assert len(git("worktree", "list").splitlines()) == 1  # both worktrees removed after the merge
