"""Session context injection against a real store and real files."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from yeetui.errors import ContextResolutionError
from yeetui.messages import Message, TextPart, ThinkingPart, ToolCallPart, ToolResultPart
from yeetui.runs.spawn_context import CONTEXT_CAP_BYTES, DEFAULT_TEMPLATE, VALID_FORMS, resolve_context
from yeetui.store import Store

TASK = "Fix the failing test in tests/test_a.py."


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with await Store.open(tmp_path / "db.sqlite") as opened:
        yield opened


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    root = tmp_path / "outside"
    root.mkdir()
    (root / "secret.txt").write_text("outside secret\n")
    return root


async def _parent(store: Store, title: str = "Refactor the parser") -> str:
    return (await store.create_session(profile="build", title=title)).id


async def _conversation(store: Store, session_id: str) -> None:
    """A parent transcript with text, thinking, a nudge, ok/error/pending tool calls and their results."""
    await store.append_message(session_id, Message.user("Please refactor src/a.py."))
    await store.append_message(session_id, Message(role="assistant", parts=(
        ThinkingPart(text="PRIVATE THOUGHTS", signature="sig"),
        TextPart(text="Reading the file first."),
        ToolCallPart(id="c1", name="read_file", arguments={"path": "src/a.py"}),
        ToolCallPart(id="c2", name="bash", arguments={"command": "pytest -q", "timeout": 30}),
    )))
    await store.append_message(session_id, Message(role="tool", parts=(
        ToolResultPart(call_id="c1", name="read_file", content="RESULT BODY of a.py\nline two"),
        ToolResultPart(call_id="c2", name="bash", content="1 failed", is_error=True),
    )))
    await store.append_message(session_id, Message.user("NUDGE TEXT", nudge=True))
    await store.append_message(session_id, Message(role="assistant", parts=(
        TextPart(text="Delegating the fix."),
        ToolCallPart(id="c3", name="spawn_agent", arguments={"profile": "fixer", "task": "x\ny  z"}),
    )))


async def _resolve(spec: str, store: Store, project: Path, parent: str | None = None, **kw: object) -> str:
    return await resolve_context(spec, store=store, parent_session_id=parent, project_root=project,
                                 task=TASK, **kw)  # type: ignore[arg-type]


def _context_of(prompt: str) -> str:
    """The context part of a prompt rendered with the default template."""
    head, sep, tail = prompt.partition("\n\n## Task\n\n")
    assert sep and tail == f"{TASK}\n"
    assert head.startswith("## Context from parent session\n\n")
    return head.removeprefix("## Context from parent session\n\n")


# ---------------------------------------------------------------------------------------------- sources


async def test_none_gives_the_task_only(store: Store, project: Path) -> None:
    parent = await _parent(store)
    await _conversation(store, parent)
    assert await _resolve("none", store, project, parent) == TASK
    assert await _resolve(" none ", store, project, None) == TASK


async def test_default_template_constant() -> None:
    assert DEFAULT_TEMPLATE == "## Context from parent session\n\n{context}\n\n## Task\n\n{task}\n"
    assert CONTEXT_CAP_BYTES == 51_200


async def test_summary_markdown(store: Store, project: Path) -> None:
    parent = await _parent(store)
    child = (await store.create_session(profile="fixer", parent_id=parent)).id
    for index in range(12):
        await store.breadcrumbs.add(session_id=parent, summary=f"crumb-{index:02d} done",
                                    child_session_id=child if index == 11 else None)
    await _conversation(store, parent)
    await store.append_message(parent, Message.assistant("Final word. " + "long " * 600))
    context = _context_of(await _resolve("summary_markdown", store, project, parent))
    assert "Refactor the parser" in context
    assert "crumb-00" not in context and "crumb-01" not in context
    for index in range(2, 12):
        assert f"- crumb-{index:02d} done" in context
    assert context.index("crumb-02") < context.index("crumb-11")
    assert "### Last assistant reply\n\nFinal word." in context
    assert context.endswith("…") and len(context) < 3_000
    assert "Please refactor" not in context and "RESULT BODY" not in context


async def test_summary_markdown_of_a_fresh_parent_is_empty(store: Store, project: Path) -> None:
    parent = await _parent(store)
    await store.append_message(parent, Message.user("hello"))
    assert await _resolve("summary_markdown", store, project, parent) == TASK


async def test_summary_markdown_without_title_uses_the_id(store: Store, project: Path) -> None:
    parent = await _parent(store, title="")
    await store.append_message(parent, Message.assistant("Done so far."))
    context = _context_of(await _resolve("summary_markdown", store, project, parent))
    assert f"### Session: {parent[:8]}" in context and "Done so far." in context


async def test_compact_markdown(store: Store, project: Path) -> None:
    parent = await _parent(store)
    await _conversation(store, parent)
    context = _context_of(await _resolve("compact_markdown", store, project, parent))
    assert context == (
        "**User:** Please refactor src/a.py.\n\n"
        "**Assistant:** Reading the file first.\n"
        "- tool read_file(path=src/a.py) → ok\n"
        "- tool bash(command=pytest -q, timeout=30) → error\n\n"
        "**Assistant:** Delegating the fix.\n"
        "- tool spawn_agent(profile=fixer, task=x y z) → no result"
    )


async def test_compact_markdown_is_capped(store: Store, project: Path) -> None:
    parent = await _parent(store)
    await store.append_message(parent, Message.user("x" * 60_000))
    context = _context_of(await _resolve("compact_markdown", store, project, parent))
    rendered = "**User:** " + "x" * 60_000
    remaining = len(rendered) - CONTEXT_CAP_BYTES
    assert context == rendered[:CONTEXT_CAP_BYTES] + f"\n[truncated: {remaining} bytes remaining]"


async def _project_session(store: Store, project: Path, title: str = "Other", parent_id: str | None = None) -> str:
    return (await store.create_session(profile="build", title=title, cwd=project, parent_id=parent_id)).id


async def test_session_id_by_id_and_prefix(store: Store, project: Path) -> None:
    other = await _project_session(store, project)
    await store.append_message(other, Message.user("other session text"))
    by_id = await _resolve(f"session_id:{other}", store, project, None)
    assert _context_of(by_id) == "**User:** other session text"
    assert await _resolve(f"session_id:{other[:10]}", store, project, None) == by_id


async def test_session_id_unknown_names_the_id(store: Store, project: Path) -> None:
    with pytest.raises(ContextResolutionError, match=r"'session_id:feedface'.*'feedface'"):
        await _resolve("session_id:feedface", store, project, None)


async def test_session_id_empty_session_gives_task_only(store: Store, project: Path) -> None:
    other = await _project_session(store, project)
    assert await _resolve(f"session_id:{other}", store, project, None) == TASK


async def test_a_spawn_reads_only_its_own_conversation_s_sessions(store: Store, project: Path) -> None:
    root = await _project_session(store, project, "mine")
    sibling = await _project_session(store, project, "an oracle of mine", parent_id=root)
    caller = await _project_session(store, project, "the spawning child", parent_id=root)
    await store.append_message(sibling, Message.user("MY-TREE"))
    stranger = await _project_session(store, project, "another conversation")
    await store.append_message(stranger, Message.user("NOT-YOURS"))
    assert "MY-TREE" in await _resolve(f"session_id:{sibling}", store, project, caller)
    assert "MY-TREE" in await _resolve(f"session_id:{sibling[:6]}", store, project, caller)
    mine = (root, sibling, caller)
    shortest = next(stranger[:n] for n in range(1, 33) if not any(m.startswith(stranger[:n]) for m in mine))
    for ref in (stranger, stranger[:12], shortest):  # prefixes that name no session of the caller's tree
        with pytest.raises(ContextResolutionError) as refused:
            await _resolve(f"session_id:{ref}", store, project, caller)
        message = str(refused.value)
        assert "NOT-YOURS" not in message
        assert len(ref) == len(stranger) or stranger[len(ref):] not in message  # no id is completed for the caller


async def test_without_a_parent_only_this_project_s_sessions_are_read(store: Store, project: Path,
                                                                      tmp_path: Path) -> None:
    elsewhere = tmp_path / "other-project"
    elsewhere.mkdir()
    theirs = await _project_session(store, elsewhere, "someone else's project")
    await store.append_message(theirs, Message.user("OTHER-PROJECT"))
    with pytest.raises(ContextResolutionError, match="no session among this project's sessions"):
        await _resolve(f"session_id:{theirs}", store, project, None)


async def test_transcript_last_n(store: Store, project: Path) -> None:
    parent = await _parent(store)
    await _conversation(store, parent)
    context = _context_of(await _resolve("transcript:4", store, project, parent))
    assert "Please refactor" not in context
    assert context.startswith("### Assistant\n\nReading the file first.")
    assert "- call read_file(path=src/a.py) → ok" in context
    assert "### Tool results\n\n- result read_file → ok: RESULT BODY of a.py line two" in context
    assert "- result bash → error: 1 failed" in context
    assert "### User\n\nNUDGE TEXT" in context
    assert context.endswith("- call spawn_agent(profile=fixer, task=x y z) → no result")
    assert "PRIVATE THOUGHTS" not in context


async def test_transcript_result_is_brief(store: Store, project: Path) -> None:
    parent = await _parent(store)
    await store.append_message(parent, Message(role="tool", parts=(
        ToolResultPart(call_id="c9", name="grep", content="hit " * 500),)))
    context = _context_of(await _resolve("transcript:1", store, project, parent))
    assert context.startswith("### Tool results\n\n- result grep → ok: hit hit")
    assert context.endswith("…") and len(context) < 300


@pytest.mark.parametrize("spec", ["transcript:1", "transcript:100", "transcript: 7"])
async def test_transcript_bounds_accepted(store: Store, project: Path, spec: str) -> None:
    parent = await _parent(store)
    await store.append_message(parent, Message.user("only message"))
    assert _context_of(await _resolve(spec, store, project, parent)) == "### User\n\nonly message"


async def test_empty_transcript_is_not_an_error(store: Store, project: Path) -> None:
    parent = await _parent(store)
    assert await _resolve("transcript:5", store, project, parent) == TASK
    assert await _resolve("compact_markdown", store, project, parent) == TASK


@pytest.mark.parametrize("count", ["0", "-1", "101", "abc", "1.5", "1e2"])
async def test_transcript_out_of_range(store: Store, project: Path, count: str) -> None:
    parent = await _parent(store)
    with pytest.raises(ContextResolutionError, match=r"from 1 to 100") as info:
        await _resolve(f"transcript:{count}", store, project, parent)
    assert f"'transcript:{count}'" in str(info.value)


@pytest.mark.parametrize("spec", ["summary_markdown", "compact_markdown", "transcript:3"])
async def test_parent_sources_need_a_parent(store: Store, project: Path, spec: str) -> None:
    with pytest.raises(ContextResolutionError, match="no parent session") as info:
        await _resolve(spec, store, project, None)
    assert repr(spec) in str(info.value)
    with pytest.raises(ContextResolutionError, match="does not exist"):
        await _resolve(spec, store, project, "0" * 32)


@pytest.mark.parametrize("spec", ["", "   ", "bogus", "file:", "file:  ", "transcript:", "session_id:",
                                  "none:x", "file", "summary_markdown:3", "Transcript:3"])
async def test_invalid_forms_list_the_valid_ones(store: Store, project: Path, spec: str) -> None:
    parent = await _parent(store)
    with pytest.raises(ContextResolutionError) as info:
        await _resolve(spec, store, project, parent)
    message = str(info.value)
    assert repr(spec) in message and VALID_FORMS in message


# ---------------------------------------------------------------------------------------------- file:


async def test_file_relative_and_absolute_inside(store: Store, project: Path) -> None:
    (project / "src" / "notes.md").write_text("# Notes\nüñí text\n")
    for spec in ("file:src/notes.md", f"file:{project / 'src' / 'notes.md'}", "file:./src/notes.md"):
        assert _context_of(await _resolve(spec, store, project)) == "# Notes\nüñí text\n"


async def test_file_empty_gives_task_only(store: Store, project: Path) -> None:
    (project / "empty.txt").write_text("")
    assert await _resolve("file:empty.txt", store, project) == TASK


@pytest.mark.parametrize("path", ["../outside/secret.txt", "src/../notes.txt", "./..", "src/..",
                                  "{project}/src/../notes.txt"])
async def test_file_rejects_dotdot_even_inside(store: Store, project: Path, outside: Path, path: str) -> None:
    (project / "notes.txt").write_text("inside")
    spec = "file:" + path.format(project=project)
    with pytest.raises(ContextResolutionError, match=r"'\.\.'") as info:
        await _resolve(spec, store, project)
    assert repr(spec) in str(info.value)


async def test_file_rejects_absolute_outside(store: Store, project: Path, outside: Path) -> None:
    spec = f"file:{outside / 'secret.txt'}"
    with pytest.raises(ContextResolutionError, match="outside the project") as info:
        await _resolve(spec, store, project)
    assert repr(spec) in str(info.value) and "outside secret" not in str(info.value)


async def test_file_rejects_symlink_to_outside_file(store: Store, project: Path, outside: Path) -> None:
    (project / "link.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(ContextResolutionError, match="outside the project"):
        await _resolve("file:link.txt", store, project)


async def test_file_rejects_file_beneath_symlinked_outside_dir(store: Store, project: Path,
                                                                outside: Path) -> None:
    (project / "ext").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ContextResolutionError, match="outside the project"):
        await _resolve("file:ext/secret.txt", store, project)


async def test_file_symlink_inside_is_followed(store: Store, project: Path) -> None:
    (project / "src" / "real.txt").write_text("real content")
    (project / "alias.txt").symlink_to(project / "src" / "real.txt")
    (project / "srcdir").symlink_to("src", target_is_directory=True)
    assert _context_of(await _resolve("file:alias.txt", store, project)) == "real content"
    assert _context_of(await _resolve("file:srcdir/real.txt", store, project)) == "real content"


async def test_file_missing_and_directory(store: Store, project: Path) -> None:
    with pytest.raises(ContextResolutionError, match=r"'file:nope\.txt'.*No such file"):
        await _resolve("file:nope.txt", store, project)
    with pytest.raises(ContextResolutionError, match=r"'file:src'.*is a directory"):
        await _resolve("file:src", store, project)
    with pytest.raises(ContextResolutionError, match=r"is a directory"):
        await _resolve("file:.", store, project)


async def test_file_fifo_is_refused_without_hanging(store: Store, project: Path) -> None:
    os.mkfifo(project / "pipe")
    with pytest.raises(ContextResolutionError, match="not a regular file"):
        await _resolve("file:pipe", store, project)


@pytest.mark.parametrize(("data", "reason"), [
    (b"PNG\x00\x01\x02", "NUL byte at offset 3"),
    (b"caf\xe9 latin-1", "not valid UTF-8 text .bad byte at offset 3"),
    (b"ends mid char \xe2\x82", "ends inside a multi-byte character"),
    (b"a" * (CONTEXT_CAP_BYTES + 10) + b"\x00", f"NUL byte at offset {CONTEXT_CAP_BYTES + 10}"),
    (b"a" * (1 << 20) + b"\xff", f"bad byte at offset {1 << 20}"),
])
async def test_file_binary_or_invalid_utf8_rejected(store: Store, project: Path, data: bytes,
                                                    reason: str) -> None:
    (project / "blob.bin").write_bytes(data)
    with pytest.raises(ContextResolutionError, match=reason) as info:
        await _resolve("file:blob.bin", store, project)
    assert "'file:blob.bin'" in str(info.value)


async def test_file_exactly_at_the_cap_is_not_truncated(store: Store, project: Path) -> None:
    (project / "big.txt").write_bytes(b"a" * CONTEXT_CAP_BYTES)
    assert _context_of(await _resolve("file:big.txt", store, project)) == "a" * CONTEXT_CAP_BYTES


async def test_file_one_byte_over_the_cap(store: Store, project: Path) -> None:
    (project / "big.txt").write_bytes(b"a" * CONTEXT_CAP_BYTES + b"b")
    context = _context_of(await _resolve("file:big.txt", store, project))
    assert context == "a" * CONTEXT_CAP_BYTES + "\n[truncated: 1 bytes remaining]"


async def test_file_cut_never_splits_a_character(store: Store, project: Path) -> None:
    # "€" is 3 bytes; starting at byte 51,199 it straddles the cap, so it is dropped whole.
    (project / "euro.txt").write_text("a" * (CONTEXT_CAP_BYTES - 1) + "€", encoding="utf-8")
    context = _context_of(await _resolve("file:euro.txt", store, project))
    assert context == "a" * (CONTEXT_CAP_BYTES - 1) + "\n[truncated: 3 bytes remaining]"
    # Ending exactly on the cap, it is kept.
    (project / "euro.txt").write_text("a" * (CONTEXT_CAP_BYTES - 3) + "€", encoding="utf-8")
    assert _context_of(await _resolve("file:euro.txt", store, project)) == "a" * (CONTEXT_CAP_BYTES - 3) + "€"


async def test_file_large_multibyte_counts_remaining_exactly(store: Store, project: Path) -> None:
    text = "ü€😀" * 200_000  # 9 bytes per repeat, 1.8 MB: characters straddle the 1 MiB read chunks
    (project / "wide.txt").write_text(text, encoding="utf-8")
    context = _context_of(await _resolve("file:wide.txt", store, project))
    kept, _, note = context.rpartition("\n[truncated: ")
    assert text.startswith(kept) and 0 <= CONTEXT_CAP_BYTES - len(kept.encode()) < 4
    assert note == f"{len(text.encode()) - len(kept.encode())} bytes remaining]"


# ---------------------------------------------------------------------------------------------- template


async def test_custom_template(store: Store, project: Path) -> None:
    (project / "ctx.txt").write_text("CTX {task} {other} {}")
    prompt = await _resolve("file:ctx.txt", store, project, template="<ctx>{context}</ctx> {json: 1} do: {task}")
    assert prompt == f"<ctx>CTX {{task}} {{other}} {{}}</ctx> {{json: 1}} do: {TASK}"


async def test_template_without_context_placeholder(store: Store, project: Path) -> None:
    (project / "ctx.txt").write_text("hidden")
    assert await _resolve("file:ctx.txt", store, project, template="Task: {task}") == f"Task: {TASK}"


@pytest.mark.parametrize("spec", ["none", "file:ctx.txt"])
async def test_template_must_contain_task(store: Store, project: Path, spec: str) -> None:
    (project / "ctx.txt").write_text("ctx")
    with pytest.raises(ContextResolutionError, match=r"no \{task\} placeholder") as info:
        await _resolve(spec, store, project, template="## Context\n{context}")
    assert repr(spec) in str(info.value)


async def test_project_instruction_files_are_named_at_start_and_reach_the_prompt(scripted, tmp_path: Path) -> None:
    from tests.fakellm import Reply, ToolCall
    from yeetui.runtime import Runtime

    project = tmp_path / "repo"
    (project / "src").mkdir(parents=True)
    (project / ".git").mkdir()
    (project / "CLAUDE.md").write_text("CLAUDE-RULES: tabs, never spaces.\n")
    rt = await Runtime.open(cwd=project / "src", provider_factory=scripted.provider_factory)  # from a subfolder
    try:
        assert rt.project_dir == project
        assert rt.notes == ["Project instructions from CLAUDE.md are in every agent's context (config: context_files)."]
        scripted.script(Reply(tool_calls=[ToolCall("complete", {"output": "done"})]))
        await rt.launcher.run_prompt("hello")
        sent = scripted.requests[-1].text
        assert "# Project instructions from CLAUDE.md" in sent and "CLAUDE-RULES: tabs" in sent
    finally:
        await rt.close()
