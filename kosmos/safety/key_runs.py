"""Pieces of a known key: any run of RUN_MIN or more of its characters, forwards or reversed,
wherever blanks and line breaks fall in it (`cut -c 20-`, `rev`, `fold -w 10`,
`sed 's/./& /g'`), for the `Redactor`.

A tail or a middle of a key is the key to anyone who can guess or buy the rest, and a command
can print any slice of a file it may read. Any run of RUN_MIN characters of a key holds one of
the key's aligned blocks of BLOCK characters (BLOCK <= RUN_MIN / 2), so the text is searched
for those few blocks only, and each hit is grown to the run around it.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable

from kosmos.safety.secret_patterns import MASK

__all__ = ["RUN_MIN", "KeyRuns"]

RUN_MIN = 12
BLOCK = RUN_MIN // 2
_GAPS = re.compile(r"\s+")


def _trie(words: list[str]) -> str:
    """One regex for `words` (all of one length) as a trie: an alternation of literals is
    tried branch by branch at each position, a trie once per character."""
    heads: dict[str, list[str]] = defaultdict(list)
    for word in words:
        heads[word[0]].append(word[1:])
    branches = [
        re.escape(head)
        + (f"(?:{_trie(tails)})" if tails[0] and len(tails) > 1 else re.escape(tails[0]))
        for head, tails in sorted(heads.items())
    ]
    return branches[0] if len(branches) == 1 else "|".join(branches)


class KeyRuns:
    """Finds and masks runs of RUN_MIN or more characters of the keys it holds."""

    def __init__(self, keys: Iterable[str]) -> None:
        self._at: dict[str, list[tuple[str, int]]] = defaultdict(list)
        for key in {k for k in keys if len(k) > RUN_MIN}:
            key = _GAPS.sub("", key)
            for form in (key, key[::-1]):
                for start in (*range(0, len(form) - BLOCK + 1, BLOCK), len(form) - BLOCK):
                    self._at[form[start : start + BLOCK]].append((form, start))
        self._blocks = re.compile(_trie(list(self._at))) if self._at else None

    def __call__(self, text: str) -> str:
        """`text` with every run of a key masked; the line breaks inside a run stay."""
        if self._blocks is None:
            return text
        squeezed = "".join(text.split())  # str.split: several times faster than a regex
        spans = self._runs(squeezed)
        if not spans:
            return text
        where = [i for i, c in enumerate(text) if not c.isspace()] if squeezed != text else None
        out: list[str] = []
        done = 0
        for start, end in spans:
            a, b = (start, end) if where is None else (where[start], where[end - 1] + 1)
            piece = text[a:b]
            masked = "\n".join(MASK if line.strip() else line for line in piece.split("\n"))
            out += (text[done:a], masked)
            done = b
        out.append(text[done:])
        return "".join(out)

    def _runs(self, squeezed: str) -> list[tuple[int, int]]:
        """(start, end) of each run in `squeezed`, merged where they overlap."""
        assert self._blocks is not None
        spans: list[tuple[int, int]] = []
        pos = 0
        while True:
            hit = self._blocks.search(squeezed, pos)
            if hit is None:
                break
            best = hit.end()
            for form, at in self._at[hit.group()]:
                start, end, head, tail = hit.start(), hit.end(), at, at + BLOCK
                while start > 0 and head > 0 and squeezed[start - 1] == form[head - 1]:
                    start, head = start - 1, head - 1
                while end < len(squeezed) and tail < len(form) and squeezed[end] == form[tail]:
                    end, tail = end + 1, tail + 1
                if end - start >= RUN_MIN:
                    spans.append((start, end))
                    best = max(best, end)
            pos = hit.start() + 1 if best == hit.end() else best
        spans.sort()
        merged: list[tuple[int, int]] = []
        for start, end in spans:
            if merged and start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], end))
            else:
                merged.append((start, end))
        return merged
