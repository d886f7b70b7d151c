"""Run the fake LLM server standalone: `python -m tests.fakellm --script FILE.json [--port 0] [--log FILE]`.

Requests the real APIs would reject get their 400 unless `--no-validate` is given.
Prints `FAKE_LLM_URL=http://127.0.0.1:PORT` as the first stdout line, then serves until SIGTERM/SIGINT.
More replies can be queued while it runs with `POST /_fake/replies`; `GET /_fake/requests` lists requests.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from tests.fakellm.server import FakeLLM, load_script


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fakellm", description=__doc__.splitlines()[0])
    parser.add_argument("--script", type=Path, help="JSON file: a list of Reply dicts (default: no replies)")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default 0: any free port)")
    parser.add_argument("--log", type=Path, help="append each request as a JSON line (API keys redacted)")
    parser.add_argument("--no-validate", action="store_true",
                        help="answer requests the real APIs would reject (default: 400 as they would)")
    args = parser.parse_args(argv)
    try:
        replies = load_script(args.script) if args.script else []
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    with FakeLLM(port=args.port, log_path=args.log, validate=not args.no_validate) as fake:
        fake.script(*replies)
        print(f"FAKE_LLM_URL={fake.url}", flush=True)
        while not stop.wait(0.5):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
