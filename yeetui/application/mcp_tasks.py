"""The MCP Tasks extension (`io.modelcontextprotocol/tasks`) for `yeetui mcp serve`'s `spawn`.

A client that declares the extension on its `tools/call` gets a task handle back from `spawn` instead of a run
id in a tool result: the task is the run (its id is the run id, so it lives in the store and survives the
server's restart), `tasks/get` reports it, and `tasks/cancel` stops it. A client that did not declare the
extension gets the plain tool result, as before. Only 2026-era connections carry the extension's shapes; a
handshake-era session is answered the old way.

A run's states map onto a task's: queued, running and waiting for a permission answer are `working`; a run that
ended — completed, failed, timed out, interrupted, waiting for the user — is a `completed` task whose result is
the tool result (`isError` unless the run completed: the spec keeps `failed` for JSON-RPC errors); a cancelled
run is a `cancelled` task. Only the runs of the server's project are tasks: `tasks/get`, `tasks/update` and
`tasks/cancel` answer another project's run on the same data dir as an unknown task.
"""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from mcp.server.extension import Extension, MethodBinding
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    RequestParams,
    TextContent,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from yeetui.errors import YeetuiError
from yeetui.events import RunStatus

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

    from yeetui.store.records import RunRecord

TASKS = "io.modelcontextprotocol/tasks"
POLL_INTERVAL_MS = 2000
"""What a client is asked to wait between two `tasks/get`s: agents take seconds to minutes."""
_WORKING = {RunStatus.QUEUED: "queued for a free agent slot", RunStatus.RUNNING: "the agent is working",
            RunStatus.WAITING_PERMISSION: "waiting for a permission answer in yeetui"}


class TaskRuns(Protocol):
    """The use cases a task is built on (`mcp_serve.AgentService`)."""

    async def spawn(self, profile: str, prompt: str, context: str = "") -> dict[str, Any]: ...
    async def run(self, run_id: str) -> RunRecord:
        """The run, only if it is one of the server's project (another project's is unknown: no task)."""
        ...
    async def result(self, run_id: str) -> dict[str, Any]: ...
    async def cancel(self, run_id: str) -> dict[str, Any]: ...


class TaskParams(RequestParams):
    """`tasks/get` and `tasks/cancel`: which task."""

    task_id: str


class TaskUpdateParams(TaskParams):
    """`tasks/update`: answers to a task's input requests (yeetui's tasks never make any)."""

    input_responses: dict[str, Any] | None = None


class SpawnTasks(Extension):
    identifier = TASKS

    def __init__(self, service: TaskRuns) -> None:
        self._service = service

    def methods(self) -> tuple[MethodBinding, ...]:
        return (MethodBinding("tasks/get", TaskParams, self._get),
                MethodBinding("tasks/update", TaskUpdateParams, self._update),
                MethodBinding("tasks/cancel", TaskParams, self._cancel))

    async def intercept_tool_call(self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any],
                                  call_next: CallNext) -> HandlerResult:
        if params.name != "spawn" or not _declared(ctx):
            return await call_next(ctx)
        arguments = params.arguments or {}
        wrong = [k for k in ("profile", "prompt", "context") if k in arguments and not isinstance(arguments[k], str)]
        if wrong or not isinstance(arguments.get("profile"), str) or not isinstance(arguments.get("prompt"), str):
            return _error(f"spawn takes profile and prompt as strings (and context, a string, optionally); "
                          f"got {sorted(arguments)}.")
        try:
            spawned = await self._service.spawn(arguments["profile"], arguments["prompt"],
                                                arguments.get("context", ""))
            run = await self._service.run(spawned["run_id"])
        except YeetuiError as exc:
            return _error(str(exc))
        return {"resultType": "task", **_task(run)}

    async def _get(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> dict[str, Any]:
        run = await self._run(params.task_id)
        task = _task(run)
        if task["status"] == "completed":
            task["result"] = (await self._result(run)).model_dump(by_alias=True, mode="json", exclude_none=True)
        return task

    async def _update(self, ctx: ServerRequestContext[Any, Any], params: TaskUpdateParams) -> dict[str, Any]:
        await self._run(params.task_id)  # an unknown task is an error; answers to requests never made are ignored
        return {}

    async def _cancel(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> dict[str, Any]:
        run = await self._run(params.task_id)
        if not run.status.is_final:
            with contextlib.suppress(YeetuiError):  # it ended meanwhile: cancelling is cooperative, the ack stands
                await self._service.cancel(run.id)
        return {}

    async def _run(self, task_id: str) -> RunRecord:
        try:
            return await self._service.run(task_id)
        except YeetuiError as exc:
            raise MCPError(INVALID_PARAMS, f"no task {task_id!r}: {exc}") from None

    async def _result(self, run: RunRecord) -> CallToolResult:
        collected = await self._service.result(run.id)
        body = {"run_id": run.id, "label": run.label, "status": run.status.value,
                "output": collected.get("output", ""), "error": collected.get("error")}
        text = body["output"] or body["error"] or f"the run ended {run.status.value}"
        return CallToolResult(content=[TextContent(text=text)], structured_content=body,
                              is_error=run.status != RunStatus.COMPLETED)


def _declared(ctx: ServerRequestContext[Any, Any]) -> bool:
    """The client put the extension in this request's capabilities, on a wire that carries its shapes."""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return False
    declared = (ctx.meta or {}).get(CLIENT_CAPABILITIES_META_KEY)
    extensions = declared.get("extensions") if isinstance(declared, dict) else None
    return isinstance(extensions, dict) and TASKS in extensions


def _task(run: RunRecord) -> dict[str, Any]:
    if run.status == RunStatus.CANCELLED:
        status, message = "cancelled", run.error or "cancelled"
    elif run.status.is_final:
        status, message = "completed", f"the run ended {run.status.value}"
    else:
        status, message = "working", _WORKING.get(run.status, run.status.value)
    updated = run.finished_at or run.started_at or run.created_at
    if not run.status.is_final:
        updated = datetime.now(UTC)
    return {"taskId": run.id, "status": status, "statusMessage": message, "createdAt": _iso(run.created_at),
            "lastUpdatedAt": _iso(updated), "ttlMs": None, "pollIntervalMs": POLL_INTERVAL_MS}


def _iso(moment: datetime) -> str:
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).isoformat().replace("+00:00", "Z")


def _error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(text=text)], is_error=True)


