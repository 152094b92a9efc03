"""Fleets: one skill on many hosts at once, with one approval and one summary.

No front-end imports here: line mode, headless and the TUI all drive `Fleet` the same way.
"""
