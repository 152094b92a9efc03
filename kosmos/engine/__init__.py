"""The skill engine: the seed-001 state machine and what it talks to."""
