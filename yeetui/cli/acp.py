"""`yeetui acp`: yeetui as an Agent Client Protocol agent on stdio (see `yeetui.acp.agent`).

stdout carries the protocol; nothing else may be printed there. The log goes to the data dir as for every
command. Each session the client opens gets the runtime of its own folder (`session/new`'s `cwd`).
"""

from __future__ import annotations

import argparse
from typing import Any, cast

from yeetui.cli.exit_codes import EXIT_OK


async def cmd_acp(args: argparse.Namespace) -> int:
    from acp import run_agent

    from yeetui.acp.agent import YeetuiAgent

    agent = YeetuiAgent()
    try:
        # The SDK routes only the methods the agent has (the others are `method not found`): the protocol
        # class names them all. `session/resume` is still marked unstable in the SDK.
        await run_agent(cast(Any, agent), observers=[agent.observe], use_unstable_protocol=True)
    finally:
        await agent.close()
    return EXIT_OK
