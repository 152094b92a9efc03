"""Where commands run: this machine or a host over SSH."""
