"""MCP servers the user already has: found in the other agents' config files and yeetui's own
(`servers`, `sources`), started only with the user's consent where a project file defines them (`consent`)."""
