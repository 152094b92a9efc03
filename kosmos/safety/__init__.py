"""Safety checks that sit between the LLM and the host: command policy and secret redaction.

Both are pure: no I/O and no imports from the engine or the front ends.
"""

from kosmos.safety.policy import Assessment, Verdict, assess
from kosmos.safety.redact import MASK, Redactor

__all__ = ["MASK", "Assessment", "Redactor", "Verdict", "assess"]
