"""What yeetui says at start when agents' bash gets less than bubblewrap (and `yeetui doctor`'s words for it)."""

from __future__ import annotations

NO_SANDBOX = "No OS sandbox works on this machine (bubblewrap or Landlock): read-only agents get no bash"
NOT_SHIELDED = ("bubblewrap does not work here, only the Landlock fallback, which cannot keep .git/, .yeetui/, "
                ".claude/ and .opencode/ read-only")
REFUSED = ("agents that write get no bash (remedy: let bubblewrap run — `yeetui doctor` says how — or accept the "
           "weaker sandbox with `tools: {bash_sandbox: unshielded}` in your own config.yaml)")


def sandbox_notices(found: str | None, configured: str) -> list[str]:
    """The start-up warning on what agents' bash runs in, when it is less than bubblewrap."""
    if found == "bwrap":
        return []
    if found == "landlock":
        if configured == "unshielded":
            return [f"{NOT_SHIELDED}: agents that write run bash under it (tools.bash_sandbox: unshielded)."]
        return [f"{NOT_SHIELDED}: {REFUSED}."]
    if configured == "unshielded":
        return [f"{NO_SANDBOX}; agents that write run bash with your rights, behind the permission rules only "
                "(tools.bash_sandbox: unshielded)."]
    return [f"{NO_SANDBOX}, and {REFUSED}."]
