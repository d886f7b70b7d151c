"""`yeetui mcp serve`: yeetui's subagents as MCP tools, for any MCP client (an editor, another agent).

Tools: `list_profiles`, `spawn(profile, prompt, context?)` → a run id at once, `status(run_id)`,
`wait(run_id, timeout_s ≤ 50)` → the state and the output so far, `result(run_id)`, `send(run_id, text)`,
`cancel(run_id)`. No call blocks for more than 50 s (clients cut tool calls at about 60 s): a long run is
followed with repeated `wait`s, or, by a client that speaks the MCP Tasks extension, as the task `spawn`
returns it as (`mcp_tasks`). A spawned run is an ordinary detached run of the project's store — in the TUI's
ledger and `yeetui agents list`, under the same caps, permissions and sandbox; what would ask is asked in a TUI
on the same store, or refused with a message saying so. The tools see only the runs of the project the server
was started in, though the data dir holds every project's. Over HTTP, every request must name this server in
Host and Origin and carry the bearer token (`yeetui.application.mcp_http`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.mcpserver import Context  # the SDK reads the tools' annotations: `wait` takes its Context

from yeetui.application.agents import cancel_run, run_json, steer_run
from yeetui.application.surface import Surface
from yeetui.errors import YeetuiError
from yeetui.events import RunStatus
from yeetui.store.records import RunRecord
from yeetui.text import cap

MAX_WAIT = 50.0
"""Seconds one `wait` may block, under the ~60 s most MCP clients allow a tool call."""
POLL = 0.2
PROGRESS_EVERY = 5.0
"""Seconds between two progress notifications of a `wait` (and one whenever the run's state changes)."""
Progress = Callable[[float, float, str], Awaitable[None]]
"""Seconds waited, seconds allowed, the run's state in words."""
OUTPUT_CAP = 50_000


class AgentService:
    """The use cases behind the tools, over one surface (one project and data dir). A run is looked up only
    among the runs of that project (`run`), though the data dir holds every project's."""

    def __init__(self, surface: Surface) -> None:
        self._surface = surface

    def list_profiles(self) -> list[dict[str, Any]]:
        profiles = self._surface.profiles
        return [{"name": p.name, "description": p.description, "read_only": not p.workspace.allow_writes}
                for p in (profiles.get(n) for n in profiles.names()) if "subtask" in p.capabilities]

    async def spawn(self, profile: str, prompt: str, context: str = "") -> dict[str, Any]:
        if not prompt.strip():
            raise YeetuiError("spawn needs a prompt: what the agent should do.")
        self._surface.profiles.get(profile)  # an unknown profile is refused here, with the known ones named
        if context.strip():
            prompt = f"{prompt}\n\n# Context from the caller\n{context.strip()}"
        run, pid = await self._surface.agents.start_detached(profile=profile, prompt=prompt, model=None,
                                                             context="none", timeout=None, label=None,
                                                             approve=False, ask_any_yeetui=True)
        return {"run_id": run.id, "label": run.label, "status": run.status.value, "worker_pid": pid}

    async def run(self, run_id: str) -> RunRecord:
        """The run `run_id` names (its id, its label or a prefix of its id) — only a run of this server's
        project: one another project left on the same data dir is answered as unknown, so a client of one
        project never reads, steers or stops another's."""
        store, project = self._surface.store, self._surface.project_dir
        run = await store.resolve_run(run_id)
        if await store.session_project(run.session_id) != project:
            raise YeetuiError(f"There is no run {run_id!r} in this project ({project}).")
        return run

    async def status(self, run_id: str) -> dict[str, Any]:
        run = await self.run(run_id)
        data = await run_json(self._surface.store, run)
        return {key: data.get(key) for key in ("id", "label", "profile", "status", "error", "output", "model",
                                               "cost", "created_at", "finished_at")} | {"tree": data["tree"],
                                                                                        **_note(run.status)}

    async def wait(self, run_id: str, timeout_s: float = 30.0, progress: Progress | None = None) -> dict[str, Any]:
        """Block until the run ends or `timeout_s` (at most 50) pass: its state and its output so far. Meanwhile
        `progress` hears, every `PROGRESS_EVERY` seconds and when the state changes, the seconds waited of
        those allowed and the run's state in words (the MCP client's progress notifications)."""
        store = self._surface.store
        run = await self.run(run_id)
        loop = asyncio.get_running_loop()
        started = loop.time()
        allowed = max(0.0, min(float(timeout_s), MAX_WAIT))
        told: tuple[str, float] | None = None
        while not run.status.is_final and loop.time() < started + allowed:
            waited = loop.time() - started
            if progress is not None and (told is None or told[0] != run.status.value
                                         or waited - told[1] >= PROGRESS_EVERY):
                told = (run.status.value, waited)
                await progress(round(waited, 1), allowed, f"{run.label or run.profile}: {run.status.value}")
            await asyncio.sleep(POLL)
            run = await store.resolve_run(run.id)
        return {"run_id": run.id, "status": run.status.value, "done": run.status.is_final,
                "output": await self._output(run.id, run.session_id, run.result), "error": run.error,
                **_note(run.status)}

    async def result(self, run_id: str) -> dict[str, Any]:
        run = await self.run(run_id)
        if not run.status.is_final:
            return {"run_id": run.id, "status": run.status.value, "done": False,
                    "note": "still running: call wait, or result again later"}
        return {"run_id": run.id, "status": run.status.value, "done": True,
                "output": await self._output(run.id, run.session_id, run.result), "error": run.error}

    async def send(self, run_id: str, text: str) -> dict[str, Any]:
        run = await self.run(run_id)
        await steer_run(self._surface.store, run, text)
        return {"run_id": run.id, "sent": True, "note": "the agent reads it at its next turn"}

    async def cancel(self, run_id: str) -> dict[str, Any]:
        run = await cancel_run(self._surface.store, await self.run(run_id))
        return {"run_id": run.id, "status": run.status.value, "cancelled": run.status == RunStatus.CANCELLED}

    async def _output(self, run_id: str, session_id: str, result: dict[str, Any] | None) -> str:
        """The final output when there is one, else the text the agent has written so far."""
        if result and result.get("output"):
            return cap(str(result["output"]), OUTPUT_CAP)
        messages = await self._surface.store.messages(session_id)
        texts = [m.message.text for m in messages if m.message.role == "assistant" and m.message.text]
        return cap("\n\n".join(texts), OUTPUT_CAP, keep="tail")


def _note(status: RunStatus) -> dict[str, str]:
    if status == RunStatus.WAITING_PERMISSION:
        return {"note": "waiting for the user's answer to a permission question in the yeetui open on this machine"}
    return {}


def build_server(service: AgentService, *, http: tuple[Any, str] | None = None) -> Any:
    """The MCP server (the SDK's), its tools calling `service`; errors become tool errors with their message.
    `http`: (the SDK's token verifier, the server's URL) — served over HTTP, behind the SDK's auth middleware
    (see yeetui.application.mcp_http)."""
    from mcp.server.mcpserver import MCPServer

    from yeetui.application.mcp_tasks import SpawnTasks

    auth: dict[str, Any] = {}
    if http is not None:
        from mcp.server.auth.settings import AuthSettings

        verifier, url = http
        origin = url.split("/mcp")[0]
        auth = {"token_verifier": verifier, "auth": AuthSettings(issuer_url=origin, resource_server_url=url)}
    server = MCPServer("yeetui", extensions=[SpawnTasks(service)], **auth, instructions=(
        "yeetui runs coding subagents (oracle, reviewer, planner, builder, …) in the user's project. spawn returns "
        "a run id at once; follow the run with wait (at most 50 s per call, repeat it) and collect it with result."))

    async def list_profiles() -> list[dict[str, Any]]:
        """The agent profiles a run can be spawned with: name, description, whether it only reads."""
        return service.list_profiles()

    async def spawn(profile: str, prompt: str, context: str = "") -> dict[str, Any]:
        """Start a subagent of `profile` on `prompt` in the background; returns its run id at once. `context`:
        extra text it is given (what you know that it needs)."""
        return await _checked(service.spawn(profile, prompt, context))

    async def status(run_id: str) -> dict[str, Any]:
        """A run's state, output, cost and its subagents' usage."""
        return await _checked(service.status(run_id))

    async def wait(run_id: str, ctx: Context, timeout_s: float = 30.0) -> dict[str, Any]:
        """Wait for a run to end, at most `timeout_s` seconds (50 at most): its state and its output so far.
        Progress notifications say meanwhile how long it waited and what the run is doing."""
        async def progress(waited: float, allowed: float, said: str) -> None:
            await ctx.report_progress(waited, allowed, said)
        return await _checked(service.wait(run_id, timeout_s, progress))

    async def result(run_id: str) -> dict[str, Any]:
        """A finished run's output (or error); says so when it is still running."""
        return await _checked(service.result(run_id))

    async def send(run_id: str, text: str) -> dict[str, Any]:
        """Guidance for a running agent; it reads it at its next turn."""
        return await _checked(service.send(run_id, text))

    async def cancel(run_id: str) -> dict[str, Any]:
        """Stop a run (and its own subagents)."""
        return await _checked(service.cancel(run_id))

    for tool in (list_profiles, spawn, status, wait, result, send, cancel):
        server.add_tool(tool)
    return server


async def _checked(work: Any) -> dict[str, Any]:
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        result: dict[str, Any] = await work
    except YeetuiError as exc:
        raise ToolError(str(exc)) from None  # an error result with this text (other exceptions' text is hidden)
    return result
