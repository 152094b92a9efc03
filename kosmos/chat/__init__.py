"""`kosmos chat`: the agent router (docs/protocol.md, The chat), with no front-end imports."""
