"""Safety checks that sit between the LLM and the host: command policy and secret redaction.

Both are pure: no I/O and no imports from the engine or the front ends.
"""

from kosmos.safety.assess import assess, read_only_programs
from kosmos.safety.redact import MASK, Redactor
from kosmos.safety.shell import Dialect
from kosmos.safety.verdict import Assessment, Verdict

__all__ = [
    "MASK",
    "Assessment",
    "Dialect",
    "Redactor",
    "Verdict",
    "assess",
    "read_only_programs",
]
