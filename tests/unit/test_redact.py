"""Key formats and known secrets are scrubbed from text and log records; ordinary text is left alone."""

from __future__ import annotations

import io
import json
import logging
import threading
import time

import pytest

from yeetui.redact import REDACTED, RedactingFilter, redact, secret_values_from_env

KEYS = {
    "anthropic": "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcdef",
    "openai": "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd",
    "openai-legacy": "sk-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefgh",
    "google": "AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvWx",
    "github": "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "github-pat": "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "slack": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOp",
    "jwt": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwiaWF0IjoxNTE2MjM5MDIyfQ"
           ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    "jwt-unsigned": "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZG1pbiJ9.",
    "huggingface": "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567",
    "stripe-live": "sk_live_51HxAbCdEfGhIjKlMnOpQrStUv",
    "stripe-restricted": "rk_live_51HxAbCdEfGhIjKlMnOpQrStUv",
    "stripe-test": "sk_test_4eC39HqLyjWDarjtT1zdp7dc",
    "gitlab": "glpat-xYz0AbCdEfGhIjKlMn12",
    "groq": "gsk_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEfGhIjKlMnOp",
}


@pytest.mark.parametrize("kind", sorted(KEYS))
def test_known_key_formats_are_redacted_in_running_text(kind: str) -> None:
    key = KEYS[kind]
    out = redact(f"the {kind} key is {key}, keep it safe")
    assert key not in out
    assert out == f"the {kind} key is {REDACTED}, keep it safe"


def test_marker_test_key_is_redacted() -> None:
    assert "MARKERKEY" not in redact("x-api-key: sk-ant-test-MARKERKEY-0123456789")


def test_bearer_tokens_keep_the_scheme_word() -> None:
    out = redact("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig")
    assert out == f"Authorization: Bearer {REDACTED}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("api_key=hunter2secret", f"api_key={REDACTED}"),
        ('{"api_key": "abcdef123456"}', f'{{"api_key": "{REDACTED}"}}'),
        ("GITHUB_TOKEN=abcdefghij", f"GITHUB_TOKEN={REDACTED}"),
        ("password: 'correct horse'", f"password: '{REDACTED} horse'"),
        ("X-Api-Key: zzzzzzzzzz", f"X-Api-Key: {REDACTED}"),
        ("client_secret = s3cr3t-value", f"client_secret = {REDACTED}"),
    ],
)
def test_assignments_to_secret_names_are_redacted(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens: 100000",
        "input_tokens=123456 output_tokens=42",
        "token: 8192",
        "Use the sk- prefix for keys",
        "the password field is required",
        "def api_key(self): ...",
        "desk-ant-hill and task-1234",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("machine api.example.com login alice password Zq9-netrc-secret",
         f"machine api.example.com login alice password {REDACTED}"),
        ("machine ci login deploy password hunter",  # a bare host name, with a login
         f"machine ci login deploy password {REDACTED}"),
        ("machine git.example.org password tok3n-value", f"machine git.example.org password {REDACTED}"),
        ("machine git.example.org\n  login bob\n  password Mx7-multiline-pw\nmachine other.org\n",
         f"machine git.example.org\n  login bob\n  password {REDACTED}\nmachine other.org\n"),
        ('default login anonymous password "with space 1"', f"default login anonymous password {REDACTED}"),
        ("macdef init\n\n  password s3cretPass\n", f"macdef init\n\n  password {REDACTED}\n"),
        ("$ cat ~/.netrc\npassword Correct-Horse-9\n", f"$ cat ~/.netrc\npassword {REDACTED}\n"),
        # as read_file / cat -n and grep -n show them, behind line numbers
        ("     3\tmachine git.example.org\n     4\t  login bob\n     5\t  password Mx7-numbered",
         f"     3\tmachine git.example.org\n     4\t  login bob\n     5\t  password {REDACTED}"),
        ("notes/.netrc:7:password Abc-9", f"notes/.netrc:7:password {REDACTED}"),
    ],
)
def test_netrc_passwords_are_redacted_and_the_rest_of_the_entry_kept(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "hf_hub_download(repo_id='gpt2', filename='config.json')",  # Hugging Face's own function names
        "HF_HOME=/data/hf_cache and hf_transfer enabled",
        "sk_live_mode = True; sk_test_helpers_for_billing()",  # Stripe-ish identifiers, no key
        "pk_live_51HxAbCdEfGhIjKlMnOpQrStUv",  # a Stripe publishable key is public by design
        "glpat-token-name and gsk_config",
        "eyJhbGciOiJIUzI1NiJ9 is a header alone; eyJ.short.parts too",
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",  # sha256
        "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
        "id 123e4567-e89b-12d3-a456-426614174000",  # a UUID
        "/home/me/.cache/huggingface/hub/models--gpt2/snapshots/abc/config.json",
        "v1.2.3-rc.4 and a.b.c",
        "the build machine uses password authentication",
        "Each machine has password login disabled",
        "the default password is admin",
        "password hashing\npassword reset link",
        "Password requirements: 8 characters",
        "# log in with your password\nlogin page",
    ],
)
def test_near_misses_of_the_pasted_formats_are_left_alone(text: str) -> None:
    assert redact(text) == text


def test_exact_secrets_are_redacted_longest_first_and_short_ones_ignored() -> None:
    out = redact("pw=abc and token hunter22 and hunter22x", secrets=["hunter22", "hunter22x", "ab", ""])
    # The longer secret goes first (no stray "x" left); "ab" is too short to redact; "abc" is too short to
    # count as an assigned secret.
    assert out == f"pw=abc and token {REDACTED} and {REDACTED}"


def test_empty_text() -> None:
    assert redact("", ["secret"]) == ""


def test_secret_values_from_env_picks_secret_looking_names() -> None:
    env = {
        "ANTHROPIC_API_KEY": "sk-ant-abcdefgh",
        "GITHUB_TOKEN": "ghp_12345678",
        "DB_PASSWORD": "p4ssw0rd!!",
        "MY_SECRET": "short",
        "HOME": "/home/someone/long/path",
        "MAX_TOKENS": "8192",
        "some_key": "lowercase-name-ok",
    }
    assert sorted(secret_values_from_env(env)) == sorted(
        ["sk-ant-abcdefgh", "ghp_12345678", "p4ssw0rd!!", "lowercase-name-ok"]
    )


def _logger_with_filter(secrets: list[str]) -> tuple[logging.Logger, io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RedactingFilter(secrets))
    logger = logging.getLogger(f"test_redact.{id(stream)}")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    return logger, stream


def test_filter_redacts_message_args_and_exception_text() -> None:
    logger, stream = _logger_with_filter(["my-custom-secret-value"])
    logger.info("calling with %s and %s", "sk-ant-test-MARKERKEY-0123456789", "my-custom-secret-value")
    try:
        raise RuntimeError("failed with key sk-ant-test-MARKERKEY-0123456789")
    except RuntimeError:
        logger.exception("boom")
    logger.warning("bad format %s %s", "only-one-arg")  # must not raise or drop the record
    out = stream.getvalue()
    assert "MARKERKEY" not in out and "my-custom-secret-value" not in out
    assert out.count(REDACTED) >= 3
    assert "RuntimeError" in out and "bad format" in out


@pytest.mark.timeout(30)
def test_long_unbroken_blobs_do_not_make_the_patterns_backtrack_quadratically() -> None:
    """A guard against catastrophic regexes (an earlier version took a minute for 27 KB of base64):
    tool output often holds megabytes of base64 or minified code."""
    blob = "QUJD" * 250_000  # 1 MB of base64-looking text without a word break
    assert redact(blob) == blob
    assert redact("x" * 1000 + " api_key=" + "k" * 100_000) == "x" * 1000 + f" api_key={REDACTED}"
    hyphenated = ("eyJ" + "a" * 20 + "-") * 40_000  # minified code: a million characters of word-dash-word
    assert redact(hyphenated) == hyphenated


def test_basic_auth_private_keys_and_url_passwords_are_redacted() -> None:
    from yeetui.redact import redact

    assert redact("Authorization: Basic dXNlcjpwYXNzd29yZA==") == "Authorization: Basic [REDACTED]"
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nIBAAK\n-----END RSA PRIVATE KEY-----"
    assert redact(f"key:\n{pem}\nend") == "key:\n[REDACTED]\nend"
    assert redact("cut: -----BEGIN PRIVATE KEY-----\nMIIEow") == "cut: [REDACTED]"
    assert redact("git clone https://bob:s3cr3tpass@example.com/r.git") == \
        "git clone https://bob:[REDACTED]@example.com/r.git"
    for untouched in ("https://example.com:8080/path", "ssh://git@github.com/x.git", "mailto:a@b.c",
                      "basic usage", "-----BEGIN PUBLIC KEY-----"):
        assert redact(untouched) == untouched


@pytest.mark.parametrize("document", ['{"role":"user","parts":[],"meta":{"APIKEY":-100}}',
                                      '{"password":[1,2,3],"x":1}', '{"token":{"nested":"plainvalue"}}',
                                      '{"api_key":-1234567}'])
def test_a_json_document_stays_json_after_redaction(document: str) -> None:
    """Found by the store's property test: a key named like a secret whose value is not a quoted string must not
    take the document's braces or brackets with it."""
    json.loads(redact(document))


def test_the_event_loop_thread_runs_while_another_thread_redacts_a_long_text() -> None:
    """The store redacts a streaming answer's checkpoint (the whole answer so far, ~40 KB) in its database thread.
    The patterns are the `regex` module's, which lets go of the GIL while it matches: with the standard `re`
    the thread drawing the screen stood still for each pattern's whole pass (15 ms at 40 KB), and a key typed
    then waited. Counted, not timed: the main thread's turns while one redaction runs elsewhere (with `re`,
    about 90 turns, between patterns; here, about 18,000)."""
    text = ('{"text": "' + "The offset is kept across nested scopes; token = parse(stream). " * 40_000 + '"}')
    started, done = threading.Event(), threading.Event()

    def work() -> None:
        started.set()
        redact(text, ["sk-test-secret-key-123456"])
        done.set()

    worker = threading.Thread(target=work)
    worker.start()
    started.wait()
    turns = 0
    while not done.is_set():
        turns += 1
        time.sleep(0)
    worker.join()
    assert turns >= 1_000, turns
