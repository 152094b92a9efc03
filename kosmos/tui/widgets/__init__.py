"""Widgets of the TUI, grouped by screen area: sidebar, skill form, run view and its steps."""
