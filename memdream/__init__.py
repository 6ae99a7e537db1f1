"""memdream: long-term memory for AI agents, consolidated offline into cards they can trust."""

__version__ = "0.1.0"
