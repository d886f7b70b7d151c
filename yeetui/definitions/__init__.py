"""What agents are made of, as files define them: profiles (and loading them from every layer,
Claude Code's and OpenCode's agent files among them), workflows, and the JSON schemas editors check
them with."""
