"""`kosmos chat`: the agent router of seed 002, with no front-end imports."""
