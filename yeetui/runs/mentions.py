"""`@path` in a prompt the user typed: the file goes with the prompt, as in Claude Code.

Each `@token` of the prompt that names a file of the project is read through the same confined reader the
file tools use (`yeetui.system.safepath`: symlinks resolved, nothing outside the workspace's roots), capped
at `ATTACH_CAP_BYTES` like a `file:` context, and sent after the prompt's text in a second text part. The
message keeps what was typed as its first part and a note of each attachment in its meta, so the transcript
shows the prompt and `attached calc.py (12 lines)`, not the file.

A token that names nothing and does not look like a path (`@bob`, `@oracle` read as a name) is left alone;
one that looks like a path but cannot be attached (missing, outside the project, binary, a directory) is
reported, and the prompt goes without it.
"""

from __future__ import annotations

import codecs
import os
import re
import stat
from dataclasses import dataclass
from typing import Any

from yeetui.errors import PathEscapeError, ToolError
from yeetui.messages import ATTACHMENT_CAP_BYTES, Message, TextPart
from yeetui.system.safepath import display_path, open_for_read
from yeetui.workspace import WorkspaceBinding

ATTACH_CAP_BYTES = ATTACHMENT_CAP_BYTES
MAX_ATTACHMENTS = 10
"""Files attached to one prompt at most; the rest are reported."""
_MENTION = re.compile(r"(?<!\S)@([^\s@]+)")
_TRAILING = ".,;:!?)]}\"'`"


@dataclass(frozen=True, slots=True)
class Attachment:
    path: str
    """As shown to the user and the model: relative to the project."""
    text: str
    """The content sent (the head, when the file is longer than the cap)."""
    size: int
    """Bytes of the whole file."""

    @property
    def truncated(self) -> bool:
        return len(self.text.encode("utf-8")) < self.size

    @property
    def lines(self) -> int:
        return self.text.count("\n") + (0 if self.text.endswith("\n") or not self.text else 1)

    def block(self) -> str:
        """What the model reads: the file in a tagged block, with a note when it was cut."""
        note = ""
        if self.truncated:
            note = f"\n[truncated: {self.size - len(self.text.encode('utf-8'))} bytes remaining]"
        body = self.text if self.text.endswith("\n") or not self.text else self.text + "\n"
        return f'<attached_file path="{self.path}">\n{body}</attached_file>{note}'

    def meta(self) -> dict[str, Any]:
        return {"path": self.path, "lines": self.lines, "size": self.size, "truncated": self.truncated}


def mentions(prompt: str) -> list[str]:
    """The `@tokens` of `prompt`, in order, once each, without trailing punctuation (`@calc.py,` → calc.py)."""
    found: list[str] = []
    for match in _MENTION.finditer(prompt):
        token = match.group(1).rstrip(_TRAILING)
        if token and token not in found:
            found.append(token)
    return found


def read_mentions(prompt: str, binding: WorkspaceBinding) -> tuple[list[Attachment], list[str]]:
    """The files `prompt` mentions, read (blocking: run it in a thread), and a sentence per mention that
    looked like a file but could not be attached."""
    attachments: list[Attachment] = []
    problems: list[str] = []
    for token in mentions(prompt):
        looks_like_path = "/" in token or "." in token
        if len(attachments) >= MAX_ATTACHMENTS:
            if looks_like_path:
                problems.append(f"@{token} is not attached: at most {MAX_ATTACHMENTS} files go with one prompt.")
            continue
        try:
            attachment = _read(token, binding)
        except _NotAFile:
            if looks_like_path:
                problems.append(f"@{token} is not attached: there is no such file in the project.")
            continue
        except _Refused as refused:
            problems.append(f"@{token} is not attached: {refused}")
            continue
        attachments.append(attachment)
    return attachments, problems


def prompt_message(prompt: str, attachments: list[Attachment] | tuple[Attachment, ...]) -> Message:
    """The user message of a prompt: its text, then the attached files in a second part (noted in meta)."""
    if not attachments:
        return Message.user(prompt)
    blocks = "\n\n".join(a.block() for a in attachments)
    return Message(role="user", parts=(TextPart(text=prompt), TextPart(text=f"\n\n{blocks}")),
                   meta={"attachments": [a.meta() for a in attachments]})


class _NotAFile(Exception):
    """Nothing by that name (or a name that is not a path at all)."""


class _Refused(Exception):
    """A file that exists but may or can not be attached; the message says why."""


def _read(token: str, binding: WorkspaceBinding) -> Attachment:
    try:
        fd, real = open_for_read(binding, token)
    except PathEscapeError as err:
        raise _Refused(f"it leads outside the project ({err}).") from err
    except (ToolError, OSError, ValueError) as err:
        raise _NotAFile() from err
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise _Refused("it is a directory; name the files in it to attach them.")
        if not stat.S_ISREG(info.st_mode):
            raise _Refused("it is not a regular file.")
        head = b""
        while len(head) < ATTACH_CAP_BYTES and (chunk := os.read(fd, ATTACH_CAP_BYTES - len(head))):
            head += chunk
        size = max(info.st_size, len(head))
    except OSError as err:
        raise _Refused(f"reading it failed: {err.strerror or err}.") from err
    finally:
        os.close(fd)
    if b"\0" in head:
        raise _Refused("it is binary, not text.")
    try:  # not final: a character the cap split at the end is dropped, not an error
        text = codecs.getincrementaldecoder("utf-8")("strict").decode(head, final=size <= len(head))
    except UnicodeDecodeError as err:
        raise _Refused(f"it is not UTF-8 text (bad byte at offset {err.start}).") from err
    return Attachment(path=display_path(binding, real), text=text, size=size)
