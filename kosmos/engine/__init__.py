"""The skill engine: the session's state machine and what it talks to (docs/protocol.md)."""
