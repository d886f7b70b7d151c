"""Small adapters from domain data to what the UI shows."""

from __future__ import annotations

import difflib
from typing import Any

PREVIEW_CAP = 4000


def permission_preview(tool: str, arguments: dict[str, Any]) -> str | None:
    """What the permission modal shows under the subject: the file content to be written, or a diff."""
    if tool == "write_file":
        text = str(arguments.get("content", ""))
    elif tool == "edit_file":
        old = str(arguments.get("old_string", "")).splitlines()
        new = str(arguments.get("new_string", "")).splitlines()
        text = "\n".join(difflib.unified_diff(old, new, "before", "after", lineterm=""))
    elif tool == "bash":
        return None
    else:
        return None
    return text[:PREVIEW_CAP] + ("\n…" if len(text) > PREVIEW_CAP else "")
