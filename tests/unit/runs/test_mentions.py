"""`@path` in a prompt: the file goes with it, read through the confined reader, capped; what cannot go is
said."""

from __future__ import annotations

import os
from pathlib import Path

from yeetui.messages import typed_text
from yeetui.runs.mentions import ATTACH_CAP_BYTES, mentions, prompt_message, read_mentions
from yeetui.workspace import WorkspaceBinding


def _binding(root: Path) -> WorkspaceBinding:
    return WorkspaceBinding(cwd=root.resolve(), allow_writes=True)


def test_mentions_are_tokens_after_an_at_sign() -> None:
    assert mentions("explain @calc.py, and @src/app.py. not me@example.com; @calc.py again") == [
        "calc.py", "src/app.py"]


def test_files_are_attached_and_the_rest_is_reported(tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "blob.bin").write_bytes(b"\x00\x01\x02")
    (root / "big.log").write_text("x" * (ATTACH_CAP_BYTES + 100))
    (tmp_path / "secret.txt").write_text("SECRET")
    os.symlink(tmp_path / "secret.txt", root / "link.txt")
    prompt = ("explain @calc.py with @big.log; not @blob.bin, @src/, @missing.py, @link.txt, @../secret.txt "
              "or @oracle")
    attached, problems = read_mentions(prompt, _binding(root))
    assert [(a.path, a.lines, a.truncated) for a in attached] == [("calc.py", 2, False), ("big.log", 1, True)]
    assert len(attached[1].text) == ATTACH_CAP_BYTES
    assert problems == [
        "@blob.bin is not attached: it is binary, not text.",
        "@src/ is not attached: it is a directory; name the files in it to attach them.",
        "@missing.py is not attached: there is no such file in the project.",
        *[p for p in problems if p.startswith("@link.txt is not attached: it leads outside the project")],
        *[p for p in problems if p.startswith("@../secret.txt is not attached: it leads outside the project")],
    ]
    assert len(problems) == 5 and not any("SECRET" in p for p in problems)

    message = prompt_message(prompt, attached)
    assert typed_text(message) == prompt
    assert '<attached_file path="calc.py">\ndef add(a, b):\n    return a + b\n</attached_file>' in message.text
    assert "[truncated: 100 bytes remaining]" in message.text
    assert message.meta["attachments"][0] == {"path": "calc.py", "lines": 2, "size": 32, "truncated": False}
