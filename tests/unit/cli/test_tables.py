"""Issue 24, item 13: CLI tables keep their columns when a label is long (`generic-opencode#12`), and the
listing commands use them."""

from __future__ import annotations

from yeetui.cli.common import table


def test_a_long_cell_widens_its_column_and_never_shifts_the_next() -> None:
    rows = [("0b3c9e1f2a4d", "oracle#4", "running", "0:42", "why?"),
            ("1c4d0f2e3b5a", "generic-opencode-reviewer#12", "waiting_permission", "12:03:44", "a long task")]
    lines = table(("RUN", "LABEL", "STATUS", "TIME", "TASK"), rows, right=frozenset({3})).splitlines()
    starts = {word: [line.find(word) for line in lines if word in line] for word in ("running", "waiting_permission")}
    status_column = lines[0].index("STATUS")
    assert starts["running"] == [status_column] and starts["waiting_permission"] == [status_column]
    assert lines[1].index("why?") == lines[2].index("a long task") == lines[0].index("TASK")
    assert lines[0].index("TIME") + len("TIME") == lines[1].index("0:42") + len("0:42")  # right-aligned
    assert all(not line.endswith(" ") for line in lines)
