"""The exit status of every `yeetui` command: one rule for all, listed by `yeetui --help` and the command-line
reference (a module of constants, so the parser can import it and stay fast)."""

from __future__ import annotations

import textwrap

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_WAITING_USER, EXIT_CANCELLED = 0, 1, 2, 3, 130
EXIT_CODES = (
    (EXIT_OK, "done"),
    (EXIT_FAILED, "the command failed, or a value it was given is not one yeetui can use: no such run, session, "
                  "schedule, profile, model, server or folder, a schedule that cannot fire; stderr says which"),
    (EXIT_USAGE, "the command line does not parse: an unknown command or option, a missing argument, a number out "
                 "of range, options that do not go together"),
    (EXIT_WAITING_USER, "the run stopped at a question nobody was there to answer (`yeetui run`, `agents start "
                        "--wait`)"),
    (EXIT_CANCELLED, "interrupted (ctrl+c) or cancelled"),
)


def exit_codes_text() -> str:
    """The rule as `--help` prints it."""
    rows = (textwrap.fill(meaning, 79, initial_indent=f"  {code:<5}", subsequent_indent=" " * 7)
            for code, meaning in EXIT_CODES)
    return "exit status:\n" + "\n".join(rows)
