"""Where memory meets the agents: Claude Code's settings (hooks both ways), the context a new session
starts with, and the managed block in the files agents already read (CLAUDE.md, AGENTS.md)."""
