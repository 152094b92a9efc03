"""kosmos: run AI skills against servers."""

__version__ = "0.1.0"
