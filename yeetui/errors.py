"""Exceptions that carry a message fit to show a user: what went wrong and where."""

from __future__ import annotations


class YeetuiError(Exception):
    """Base class. `str(err)` is always a complete, readable sentence."""


class ConfigError(YeetuiError):
    """A config file or setting is invalid; the message names the file (and line) and the key."""


class ProfileError(YeetuiError):
    """A profile file could not be loaded; the message names the file and line."""


class WorkflowError(YeetuiError):
    """A workflow file is invalid, or a run broke a workflow rule."""


class ChildLimitReached(YeetuiError):
    """A parent session already has as many live subagents as it may (checked when the run is written)."""


class StoreError(YeetuiError):
    """The SQLite store failed or holds something unexpected."""


class ContextResolutionError(YeetuiError):
    """A `session_context` source could not be resolved."""


class ToolError(YeetuiError):
    """A tool refused or failed; the message goes back to the model as an error result."""


class PathEscapeError(ToolError):
    """A path resolved outside the workspace binding's roots, or into a protected place."""


class PermissionDenied(ToolError):
    """A tool call was denied by the permission rules or by the user."""


class ProviderError(YeetuiError):
    """A model provider failed. `retryable` says whether another attempt may succeed."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False,
                 retry_after: float | None = None, quota: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable and not quota
        self.retry_after = retry_after
        self.quota = quota
        """The account's quota or credit is spent (not a rate limit): nothing succeeds on this provider until
        the user tops it up, so it is not retried and queued runs on it are held (`RunStatus.QUOTA_EXHAUSTED`)."""
