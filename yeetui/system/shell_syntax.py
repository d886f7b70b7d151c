"""What a bash command line runs, as argv lists, read with a real bash grammar (tree-sitter-bash) — or None
when any part of it is not plain enough to know for sure.

Permission rules match what bash will execute, not the text a model wrote: `r''m -rf x`, `\\rm -rf x` and
`rm -rf x` are all `["rm", "-rf", "x"]`. Only a small, fully understood subset is read: simple commands
whose words are literal after quote removal, joined by `;`, `&&`, `||`, `|` and `&`, with redirections that
cannot write or read a file (`>/dev/null`, `2>&1`, `<&0`). Anything else — comments, newlines, variables,
command or process substitution, globs, brace and tilde expansion, assignments, heredocs, subshells, groups,
functions, control flow, `$'…'`, or text the grammar cannot parse — makes the whole line unknown (None):
the caller must then ask a human rather than allow it.
"""

from __future__ import annotations

import functools
from typing import Any

_SEPARATORS = frozenset({";", "&&", "||", "|", "&", "|&"})
_GLOB = frozenset("*?[")
_DOUBLE_QUOTE_ESCAPES = frozenset('$`"\\')
_HARMLESS_TARGET = "/dev/null"


class _Unknown(Exception):
    """Part of the line is outside the understood subset."""


@functools.cache
def _parser() -> Any:
    # Imported on first use: start-up does not pay for the grammar.
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


def simple_commands(command: str) -> list[list[str]] | None:
    """The argv of every simple command in `command`, in order; None when the line is not fully understood."""
    if not command.strip() or any(c in command for c in "\n\r\0"):
        return None
    tree = _parser().parse(command.encode("utf-8", "surrogatepass"))
    root = tree.root_node
    if root.has_error:
        return None
    found: list[list[str]] = []
    try:
        for child in root.children:
            _statement(child, found)
    except _Unknown:
        return None
    return found or None


def _statement(node: Any, found: list[list[str]]) -> None:
    kind = node.type
    if not node.is_named:
        if kind in _SEPARATORS:
            return
        raise _Unknown(kind)
    if kind == "command":
        found.append(_command(node))
    elif kind in ("list", "pipeline"):
        for child in node.children:
            _statement(child, found)
    elif kind == "redirected_statement":
        body = node.child_by_field_name("body")
        if body is None:
            raise _Unknown("a redirection without a command")
        for child in node.children:
            if child.id == body.id:
                continue
            _redirect(child)
        _statement(body, found)
    else:  # comment, subshell, compound_statement, function_definition, if/for/while/case, declaration …
        raise _Unknown(kind)


def _command(node: Any) -> list[str]:
    argv: list[str] = []
    for child in node.children:
        if child.type == "command_name":
            if child.named_child_count != 1:
                raise _Unknown("command name")
            argv.append(_word(child.named_children[0]))
        elif child.is_named and child.type in ("word", "string", "raw_string", "concatenation", "number"):
            argv.append(_word(child))
        elif child.type == "file_redirect":
            _redirect(child)
        else:  # variable_assignment, expansions, herestrings …
            raise _Unknown(child.type)
    if not argv:
        raise _Unknown("no command")
    return argv


def _redirect(node: Any) -> None:
    """Only redirections that touch no file: `>/dev/null`, `2>/dev/null`, `&>/dev/null`, `2>&1`, `>&2`."""
    if node.type != "file_redirect":
        raise _Unknown(node.type)
    operator = ""
    destination = None
    for child in node.children:
        if not child.is_named:
            operator += child.type
        elif child.type == "file_descriptor":
            continue
        else:
            destination = child
    if destination is None:
        raise _Unknown("redirection target")
    target = _word(destination)
    if operator in (">&", "<&") and (target.isdigit() or target == "-"):
        return
    if operator in (">", ">>", "&>", "&>>", "<", ">|") and target == _HARMLESS_TARGET:
        return
    raise _Unknown(f"redirection {operator}{target}")


def _word(node: Any) -> str:
    """The literal value of a word after quote removal; raises _Unknown for anything bash would expand."""
    kind = node.type
    text: str = node.text.decode("utf-8", "surrogatepass")
    if kind == "number":
        return text
    if kind == "raw_string":  # '…': no escapes, no expansion
        return text[1:-1]
    if kind == "string":  # "…": plain content and the four escapes only
        if any(child.is_named and child.type != "string_content" for child in node.children):
            raise _Unknown("expansion inside double quotes")
        return _unescape(text[1:-1], inside_double_quotes=True)
    if kind == "concatenation":
        return "".join(_word(child) for child in node.children)
    if kind == "word":
        if any(c in _GLOB for c in _unquoted_specials(text)) or text.startswith("~") or "{" in text or "$" in text:
            raise _Unknown("glob, brace, tilde or variable expansion")
        return _unescape(text, inside_double_quotes=False)
    raise _Unknown(kind)


def _unquoted_specials(text: str) -> str:
    """The characters of an unquoted word that are not escaped with a backslash."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def _unescape(text: str, *, inside_double_quotes: bool) -> str:
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if not inside_double_quotes or nxt in _DOUBLE_QUOTE_ESCAPES:
                out.append(nxt)
            else:
                out.append(c + nxt)
            i += 2
            continue
        if c == "\\":
            raise _Unknown("a trailing backslash")
        out.append(c)
        i += 1
    return "".join(out)
