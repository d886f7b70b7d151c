"""yeetui over the Agent Client Protocol: `yeetui acp` serves yeetui as an agent to editors (`agent`)."""
