"""The terminal's front ends (`kosmos run`, its fleet, `kosmos chat`, `skills`, `hosts`,
`fleet merge`) and the parts they share: the console, the line and headless operators, the
renderers, the fleet view, the run request, driving a session under signals.

A front end builds on `kosmos.runs` and these parts; it never imports another front end.
"""
