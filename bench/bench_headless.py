"""`yeetui run` vs a minimal script calling the anthropic SDK directly, against the same fake server.

Also the cold start of `yeetui --version` against `python -c pass`.
Usage: python bench/bench_headless.py [--quick] [--rounds N]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import alternate, fake_llm, isolated_env, report

DIRECT_SDK = """
import anthropic
client = anthropic.Anthropic(max_retries=0)
with client.messages.stream(model="claude-sonnet-4-6", max_tokens=1024,
                            messages=[{"role": "user", "content": "say hello"}]) as stream:
    text = "".join(stream.text_stream)
print(text)
"""

REPLY = {"text": "Hello there, this is a short answer of a few words.", "repeat": True,
         "tool_calls": [{"name": "complete", "arguments": {"output": "hello"}}]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="one round (smoke test)")
    parser.add_argument("--rounds", type=int, default=None)
    args = parser.parse_args()
    args.rounds = args.rounds or (1 if args.quick else 9)
    with tempfile.TemporaryDirectory() as tmp, fake_llm([REPLY]) as url:
        home = Path(tmp)
        env = isolated_env(url, home)
        yeetui = [sys.executable, "-m", "yeetui", "run", "say hello"]
        direct = [sys.executable, "-c", DIRECT_SDK]
        a, b = alternate(yeetui, direct, rounds=args.rounds, env=env, cwd=home)
        report("yeetui run vs direct anthropic SDK call", a, b, goal=1.5)
        version = [sys.executable, "-m", "yeetui", "--version"]
        bare = [sys.executable, "-c", "pass"]
        a, b = alternate(version, bare, rounds=args.rounds, env=env, cwd=home)
        report("yeetui --version cold start vs python -c pass", a, b)


if __name__ == "__main__":
    main()
