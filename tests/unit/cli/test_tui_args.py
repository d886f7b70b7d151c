"""`yeetui` alone is parsed without building every command's parser; what it reads must be what the full parser
reads, and anything else is left to the full parser."""

from __future__ import annotations

import pytest

from yeetui.cli import build_parser, tui_args


@pytest.mark.parametrize("argv", [[], ["--continue"], ["--resume", "abc"], ["--resume=abc"],
                                  ["--model", "anthropic/x", "--continue"], ["--mod", "a/b"], ["--model", "run"]])
def test_the_tuis_own_options_read_as_the_full_parser_reads_them(argv: list[str]) -> None:
    args = tui_args(argv)
    assert args is not None
    assert vars(args) == {k: v for k, v in vars(build_parser().parse_args(argv)).items()
                          if k in ("command", "model", "cont", "resume")}


@pytest.mark.parametrize("argv", [["run", "hi"], ["--continue", "sessions", "list"], ["--help"], ["-h"],
                                  ["--version"], ["--model"], ["--bogus"], ["--", "x"]])
def test_anything_else_is_left_to_the_full_parser(argv: list[str]) -> None:
    assert tui_args(argv) is None
