"""Screens of the TUI: the main screen and the modals."""
