"""`kosmos mcp`: kosmos as a Model Context Protocol server, a front end like line mode and the TUI.

`server` builds the MCP server and its tools, `catalog` answers `hosts` and `skills`, `calls`
runs `run_command` and `read_file`, `skillruns` runs `run_skill` on one host or a fleet,
`asking` is the operator that asks the MCP client's person through elicitation, `models` the
tools' structured results, and `http` serves them over streamable HTTP behind a bearer token.
Nothing below the front ends knows MCP exists.
"""
