"""Loaded by Python subprocesses of the test suite (PYTHONPATH): block non-loopback connections."""

import os

if os.environ.get("YEETUI_NETGUARD") == "1":
    import sys

    sys.path.insert(0, os.path.dirname(__file__))
    from guard import install  # type: ignore[import-not-found]  # a top-level module here, on the path just set

    install()
