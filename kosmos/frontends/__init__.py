"""Front ends: the command line (line mode and headless) and, beside it, the TUI."""
