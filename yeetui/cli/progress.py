"""Live progress of a headless run on stderr: the run id at once, then what happens — subagents starting
and ending, tools, retries — one line each, with the time since the start.

Without it, `yeetui run` or `agents start --wait` on an orchestration is half a minute of nothing. The
lines are plain text (no cursor tricks), so they read the same in a terminal and in a log; `--json` gets
none (its events already say all of it). A run's streamed answer is not repeated here.
"""

from __future__ import annotations

import functools
import sys
import time
from typing import Any, TextIO

from yeetui import events as ev
from yeetui.bus import Bus
from yeetui.text import clip, one_line, seconds_text, terminal_safe

_ENDINGS = {ev.RunStatus.COMPLETED: "done", ev.RunStatus.FAILED: "failed", ev.RunStatus.TIMEOUT: "timed out",
            ev.RunStatus.CANCELLED: "cancelled", ev.RunStatus.INTERRUPTED: "interrupted",
            ev.RunStatus.WAITING_USER: "waiting for input", ev.RunStatus.BUDGET_EXHAUSTED: "budget exhausted",
            ev.RunStatus.QUOTA_EXHAUSTED: "quota exhausted"}


class HeadlessProgress:
    def __init__(self, bus: Bus, *, out: TextIO | None = None, clock: Any = time.monotonic) -> None:
        self.out = out or sys.stderr
        self.clock = clock
        self.started = clock()
        self.labels: dict[str, str] = {}
        self.began: dict[str, float] = {}
        self.first: str | None = None
        bus.add_listener(self._on_event)

    def _say(self, text: str) -> None:
        elapsed = int(self.clock() - self.started)
        try:
            print(f"[{elapsed // 60}:{elapsed % 60:02d}] {text}", file=self.out, flush=True)
        except (OSError, ValueError):  # stderr closed: progress is a courtesy, never a failure
            pass

    def _on_event(self, event: Any) -> None:
        if isinstance(event, ev.RunRegistered):
            self.labels[event.run_id] = event.label
            self.began[event.run_id] = self.clock()
            if self.first is None:
                self.first = event.run_id
                self._say(f"run {event.run_id[:12]} · {event.label} on {event.model}")
            else:
                self._say(f"{event.label} started")
        elif isinstance(event, ev.ToolCallStarted):
            self._say(f"{self._label(event.run_id)}: {clip(one_line(event.activity or event.name), 80)}")
        elif isinstance(event, ev.ProviderRetrying):
            self._say(f"{self._label(event.run_id)}: {event.text}")
        elif isinstance(event, ev.Notice) and event.level != "error":  # where a pane child runs, a worktree …
            self._say(f"{event.level}: {terminal_safe(one_line(event.text))}" if event.level == "warning"
                      else terminal_safe(one_line(event.text)))
        elif isinstance(event, ev.RunStatusChanged) and event.status in _ENDINGS and event.run_id != self.first:
            took = self.clock() - self.began.get(event.run_id, self.started)
            reason = f": {clip(one_line(event.reason), 80)}" if event.reason and event.reason != event.status.value \
                else ""
            self._say(f"{self._label(event.run_id)} {_ENDINGS[event.status]} after {seconds_text(took)}{reason}")

    def _label(self, run_id: str) -> str:
        return self.labels.get(run_id, run_id[:8])


_ANSWERS = {"allow_once": "allowed once", "allow_always": "allowed (always)", "deny": "denied by the user",
            "unattended": "refused: nobody could be asked"}


class PaneView(HeadlessProgress):
    """What a tmux-mode worker shows in its window: the progress lines, and the run's own answer as it
    streams (its subagents' text stays in their sessions). Text from the model is stripped of escape
    sequences before it reaches the terminal."""

    def __init__(self, bus: Bus, run_id: str, *, out: TextIO | None = None, asked_in_yeetui: bool = True) -> None:
        super().__init__(bus, out=out or sys.stdout)
        self.run_id = run_id
        self.asked_in_yeetui = asked_in_yeetui
        """Whether a yeetui follows this pane to answer its questions (else they are refused unasked)."""
        self._mid_line = False

    def _say(self, text: str) -> None:
        if self._mid_line:
            self._write("\n")
            self._mid_line = False
        super()._say(text)

    def _on_event(self, event: Any) -> None:
        if isinstance(event, ev.TextDelta) and event.run_id == self.run_id:
            self._write(terminal_safe(event.text))
            self._mid_line = not event.text.endswith("\n")
            return
        if isinstance(event, ev.PermissionRequested) and not event.reply.done():  # not answered here at once
            subject = terminal_safe(clip(one_line(event.subject), 120))
            where = "waiting for the answer in yeetui" if self.asked_in_yeetui else "nobody can answer here"
            self._say(f"{event.agent_label} asks to use {event.tool}: {subject} — {where}")
            event.reply.add_done_callback(functools.partial(self._answered, event))
            return
        super()._on_event(event)

    def _answered(self, event: ev.PermissionRequested, reply: Any) -> None:
        """The line after "waiting for the answer": what the answer was, so the window no longer reads as
        waiting."""
        said = "no longer needed (the call stopped waiting)" if reply.cancelled() else \
            _ANSWERS.get(reply.result(), str(reply.result()))
        self._say(f"{event.agent_label}: {event.tool} {said}")

    def _write(self, text: str) -> None:
        try:
            self.out.write(text)
            self.out.flush()
        except (OSError, ValueError):
            pass
