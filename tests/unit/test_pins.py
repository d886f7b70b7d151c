"""What an approval or trust pins of a command: hostile words (a `python -c` program longer than a file name may
be, a path that loops) are words, never a crash of `mcp list`, `mcp approve` or the start."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from tests.integration.helpers import git_project, run_yeetui
from yeetui.settings.pins import anchor_to_project, command_pins, shell_command_pins


def test_words_no_file_can_be_named_are_left_as_they_are(tmp_path: Path) -> None:
    project = git_project(tmp_path)
    (project / "srv.py").write_text("print('hi')\n")
    (project / "loop").symlink_to(project / "loop")
    program = "import sys\n" + "x = 1\n" * 300  # longer than NAME_MAX: stat() says ENAMETOOLONG
    argv = [sys.executable, "-c", program, "srv.py", "loop", "a/" * 3000]
    assert anchor_to_project(argv, project) == [sys.executable, "-c", program, str(project / "srv.py"), "loop",
                                                "a/" * 3000]
    assert "srv.py" in command_pins(argv, project, path=os.environ["PATH"])
    assert shell_command_pins(f"echo {'y' * 5000} && cat srv.py", project, path=os.environ["PATH"]).keys() >= \
        {"srv.py"}


def test_mcp_approve_and_list_take_a_server_whose_argument_is_a_long_program(tmp_path: Path) -> None:
    """`mcp approve` of a project server `python -c '<a program>'` crashed with a traceback: File name too long."""
    project = git_project(tmp_path)
    program = "import time\n" + "# a long program\n" * 40 + "time.sleep(0)\n"
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"inline": {"command": sys.executable,
                                                                             "args": ["-c", program]}}}))
    approved = run_yeetui("mcp", "approve", "inline", cwd=project)
    assert approved.returncode == 0 and "Traceback" not in approved.stderr, approved.stderr
    listed = run_yeetui("mcp", "list", "--json", cwd=project)
    assert listed.returncode == 0 and "Traceback" not in listed.stderr, listed.stderr
