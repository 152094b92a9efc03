"""Run assembly: from a request to a ready session or host, below every front end.

`assembly` (choices, options, transcript, the session), `policy` (which approval policy),
`skills` (the local library, then the host's skills folder), `replay` (resume and replay),
`fleet` (each host's session in a fleet) and `direct` (one command or file read on a host).
Front ends import these; nothing here imports a front end, prints or handles signals.
"""
