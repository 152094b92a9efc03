"""The Textual front end: `kosmos tui`."""
