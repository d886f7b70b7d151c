"""Scrub API keys and other credentials out of text before it is shown, stored or logged.

Two layers: well-known key formats (so a key pasted into a tool's output or echoed by a proxy is caught
even when yeetui never knew it) and the exact secret values yeetui does know (its own provider keys, and
whatever `secret_values_from_env` finds). Both are replaced with `[REDACTED]`.

The patterns are the `regex` module's, not `re`'s: it lets go of the GIL while it matches. The store redacts
each checkpoint of a streaming answer (the whole answer so far) in its database thread, and with `re` the
event loop stood still for each pattern's pass over it (15 ms at 40 KB), a key typed meanwhile with it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

import regex

REDACTED = "[REDACTED]"

_MIN_SECRET_LENGTH = 4
"""Exact secrets shorter than this are ignored: replacing "ab" everywhere would wreck the text."""

_ENV_SECRET_MIN_LENGTH = 8
_ENV_SECRET_NAME_WORDS = ("KEY", "SECRET", "TOKEN", "PASSWORD")

# Each alternative is a complete token; all are replaced wholesale.
_TOKEN_PATTERNS = (
    r"sk-ant-[A-Za-z0-9_\-]{8,}",  # Anthropic
    r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}",  # OpenAI (and OpenAI-style proxies)
    r"AIza[0-9A-Za-z_\-]{30,}",  # Google API keys
    r"gh[pousr]_[A-Za-z0-9]{30,}",  # GitHub tokens
    r"github_pat_[A-Za-z0-9_]{22,}",  # GitHub fine-grained tokens
    r"(?:AKIA|ASIA)[0-9A-Z]{16}",  # AWS access key ids
    r"xox[abposr]-[A-Za-z0-9\-]{10,}",  # Slack
    r"hf_[A-Za-z0-9]{30,}",  # Hugging Face
    r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}",  # Stripe secret and restricted keys (not the publishable pk_)
    r"gl(?:pat|dt|rt|ptt)-[A-Za-z0-9_\-]{20,}",  # GitLab personal, deploy, runner and trigger tokens
    r"gsk_[A-Za-z0-9]{30,}",  # Groq
)
_TOKENS = regex.compile(r"(?<![A-Za-z0-9_])(?:" + "|".join(_TOKEN_PATTERNS) + r")")

_JWT = regex.compile(r"(?<![A-Za-z0-9_\-])eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]*")
"""A JSON Web Token: a base64url JSON header (`{"` is `eyJ`), a payload and a signature (empty when unsigned),
dot-separated. Its own pattern, with `-` in the look-behind: a JWT is one run of these characters, so a blob
of failed candidates costs linear time."""
_GAP = r"(?:\n[ \t]*\d+\t|\s)+"
"""Space between netrc words, a line break included, also when a tool numbered the lines (`     5\t`)."""
_NETRC = regex.compile(
    rf"\b(?P<head>(?:(?:machine{_GAP}\S+|default)(?:{_GAP}(?:account|port){_GAP}\S+)*{_GAP}login{_GAP}\S+"
    rf"|machine{_GAP}(?:[\w\-]+\.)+[\w\-]+(?::\d+)?)(?:{_GAP}(?:login|account|port){_GAP}\S+)*{_GAP}password{_GAP})"
    r"(?P<value>\"[^\"\n]*\"|[^\s\"'`]+)")
"""`.netrc` entries, on one line or across lines: `machine HOST login USER password SECRET`. Without `login`
the host must look like one (`machine api.example.com password …`), so prose such as "the build machine
uses password authentication" is left alone."""
_NETRC_LINE = regex.compile(r"(?m)^(?P<head>(?:[ \t]*\d+\t|[^\s:]*:\d+[:\-])?[ \t]*password[ \t]+)"
                            r"(?P<value>\"[^\"\n]*\"|(?=\S*[^a-z\s])\S+)[ \t]*$")
"""A line of its own `password SECRET` (a netrc file whose `machine` line is further up), also behind a line
number (`     5\t` from `read_file` or `cat -n`, `file:5:` from `grep -n`). The value must hold something
besides lowercase letters, so a heading like `password hashing` is left alone."""
_BEARER = regex.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=\-]{8,}")
_BASIC = regex.compile(r"(?i)\b(basic\s+)[A-Za-z0-9+/=]{8,}")
"""`Authorization: Basic dXNlcjpwYXNz` — base64 of user:password."""
_PRIVATE_KEY = regex.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", regex.DOTALL)
"""A PEM private key block, whole (to the end of the text when its END line is cut off)."""
_URL_PASSWORD = regex.compile(r"(?i)\b([a-z][a-z0-9+.\-]{0,31}://[^/\s:@\"'<>]+:)[^/\s@\"'<>]+(@)")
"""`scheme://user:password@host`: the password goes, the user and host stay. A scheme is at most 32 characters,
so a long run of scheme characters (`a-b-c-…` in minified code) is not rescanned to its end from every word."""

# `api_key=…`, `"password": "…"`, `X-Api-Key: …`, `GITHUB_TOKEN=…`. The name must END in the keyword, so
# `max_tokens: 100000` is left alone; the value must be 6+ characters and not a plain number, and it never
# takes a brace or a bracket (a JSON object's structure: `{"APIKEY":-100}` stays a valid document). The name
# starts at a word boundary and is bounded, so a long unbroken blob (base64 in tool output) costs linear
# time instead of quadratic.
# The value stops at a backslash: text is often redacted as JSON (the store redacts a message serialised), where
# `secret=KIWI` and the line break after it read `secret=KIWI\n…`, and the escape must not make a short word
# long enough to count. Markdown and sentence punctuation at its end (`**secret=KIWI**`, `(token=abc).`) do not
# count towards the length either (see `_assigned`).
_ASSIGNMENT = regex.compile(
    r"(?i)(?<![A-Za-z0-9_\-])"
    r"(?P<name>[A-Za-z0-9_\-]{0,48}?(?:api[_-]?key|(?:secret|private|access)[_-]?key|secret|token|"
    r"passw(?:or)?d|pwd))"
    r"(?P<op>\\?[\"']?\s*[:=]\s*)"
    r"(?P<quote>\\?[\"']|)"
    r"(?P<value>(?!-?\d+\b)(?!\[REDACTED\])[^\s\"'`<>,;&{}\[\]\\]{6,})"
)
_ASSIGNED_MIN_LENGTH = 6
_TRAILING_PUNCTUATION = ".,:;!?)*"
"""Ends a sentence or a Markdown emphasis rather than a value."""


def _assigned(match: regex.Match[str]) -> str:
    """The assignment with its value redacted, or unchanged when the value, less the punctuation after it, is
    too short to be a credential (`secret=KIWI.` is a word in a sentence)."""
    value = match.group("value")
    core = value.rstrip(_TRAILING_PUNCTUATION)
    if len(core) < _ASSIGNED_MIN_LENGTH:
        return match.group(0)
    return match.group("name") + match.group("op") + match.group("quote") + REDACTED + value[len(core):]


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """Return `text` with known key formats and the given exact `secrets` replaced by `[REDACTED]`."""
    if not text:
        return text
    for secret in sorted({s for s in secrets if s and len(s) >= _MIN_SECRET_LENGTH}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    text = _TOKENS.sub(REDACTED, text)
    text = _JWT.sub(REDACTED, text)
    text = _NETRC.sub(lambda m: m.group("head") + REDACTED, text)
    text = _NETRC_LINE.sub(lambda m: m.group("head") + REDACTED, text)
    text = _PRIVATE_KEY.sub(REDACTED, text)
    text = _BEARER.sub(lambda m: m.group(1) + REDACTED, text)
    text = _BASIC.sub(lambda m: m.group(1) + REDACTED, text)
    text = _URL_PASSWORD.sub(lambda m: m.group(1) + REDACTED + m.group(2), text)
    return _ASSIGNMENT.sub(_assigned, text)


PROVIDER_KEY_VARIABLES = frozenset({"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "GEMINI_API_KEY",
                                    "GOOGLE_API_KEY", "OPENROUTER_API_KEY", "AZURE_API_KEY", "AZURE_OPENAI_API_KEY"})
"""Where yeetui and litellm read model providers' keys from (with every other `*_API_KEY`)."""


def is_secret_name(name: str) -> bool:
    """Whether a variable named `name` holds a secret by its name: KEY, SECRET, TOKEN or PASSWORD in it."""
    return any(w in name.upper() for w in _ENV_SECRET_NAME_WORDS)


def is_provider_key_name(name: str) -> bool:
    """Whether `name` is a variable a model provider's key is read from (`ANTHROPIC_API_KEY`, `*_API_KEY`)."""
    upper = name.upper()
    return upper in PROVIDER_KEY_VARIABLES or upper.endswith("_API_KEY")


def without_provider_keys(env: Mapping[str, str], keep: frozenset[str] = frozenset()) -> dict[str, str]:
    """`env` less every provider key variable, but those in `keep` (a config named them)."""
    return {k: v for k, v in env.items() if k in keep or not is_provider_key_name(k)}


def secret_values_from_env(env: Mapping[str, str]) -> list[str]:
    """Values of variables whose names mention KEY, SECRET, TOKEN or PASSWORD (8+ characters long)."""
    values = {value for name, value in env.items() if len(value) >= _ENV_SECRET_MIN_LENGTH and is_secret_name(name)}
    return sorted(values, key=len, reverse=True)


class RedactingFilter(logging.Filter):
    """A logging filter that redacts each record's message, exception text and stack before it is emitted.

    Attach it to handlers (not loggers) so records propagated from child loggers are covered too.
    """

    def __init__(self, secrets: Iterable[str] = (), name: str = "") -> None:
        super().__init__(name)
        self.secrets: list[str] = list(secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string must not hide the record; log it unformatted
            message = f"{record.msg} {record.args!r}"
        record.msg = redact(message, self.secrets)
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text, self.secrets)
        if record.stack_info:
            record.stack_info = redact(record.stack_info, self.secrets)
        return True
