"""A pytest plugin (loaded with `-p tests.netguard`) that makes any non-loopback connection fail loudly.

It guards this process, and — through `tests/netguard_site/sitecustomize.py` on PYTHONPATH — every Python
subprocess a test starts (`yeetui run`, the TUI in tmux, benchmarks).
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.netguard_site.guard import install

SITE_DIR = Path(__file__).parent / "netguard_site"


def pytest_configure(config) -> None:
    install()
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(SITE_DIR), os.environ.get("PYTHONPATH", "")) if p
    )
    os.environ["YEETUI_NETGUARD"] = "1"
