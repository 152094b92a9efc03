"""Where bash evaluates text as code after the command line was read.

bash evaluates a variable's *value* as an arithmetic expression wherever arithmetic is done
(`$((x))`, `((x))`, `let`, `[[ x -eq 1 ]]`, array subscripts, `${s:x}`, `declare -i`), and an
array subscript inside that value is expanded, `$(...)` and all: with x='a[$(rm -rf ~)]',
`echo $((x))` runs the rm. `${x@P}` expands a value as a prompt (command substitutions
included) and `${!x}` reads a variable named by a value. None of these can be read from the
command line alone, so each is read-only only when what is evaluated is known: literal
numbers, the shell's own counters, or the output of a command that prints a number.
dash has none of this: its arithmetic takes a value as a number or fails.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kosmos.safety.options import Opts
from kosmos.safety.paths import command_name
from kosmos.safety.queries import risky_name
from kosmos.safety.shell import Dialect, Script, Simple, Word

__all__ = ["param_hazard", "test_hazard", "word_hazard"]

# What may stand in an expression besides numbers and operators: $#, $?, $$, $!, ${#name}.
_KNOWN_NUMBERS = re.compile(r"\$[#?$!]|\$\{#[A-Za-z_][A-Za-z0-9_]*\}")
_INERT = re.compile(r"[\s0-9+\-*/%<>=!&|^~?:,()]*")
_SUBSTITUTION = re.compile(r"\$\((?!\()|`")
_PARAM = re.compile(
    r"(?P<bang>!?)(?P<length>#?)(?P<name>[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])"
    r"(?P<subscript>\[[^\]]*\])?(?P<rest>.*)",
    re.S,
)
_NUMERIC_DATE = re.compile(r"\+(?:%[sYmdHMSjuwVGgCyeIklUWN])+")
_OFFSET = re.compile(r"\s*-?\s*\d+\s*(?::\s*-?\s*\d+\s*)?")
_ARITH_TEST = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})


def _prints_a_number(script: Script) -> bool:
    """Whether a substitution's output is a number: its last command is one that prints one."""
    if len(script.pipelines) != 1:
        return False
    last = script.pipelines[0].commands[-1]
    if not isinstance(last, Simple) or not last.words or not last.words[0].literal:
        return False
    name, args = command_name(last.words[0].text), last.words[1:]
    if not all(w.literal for w in args):
        return False
    texts = [w.text for w in args]
    if name in ("nproc", "wc", "getconf"):
        return True
    if name == "date":
        return len(texts) == 1 and bool(_NUMERIC_DATE.fullmatch(texts[0]))
    if name == "id":
        return bool(texts) and all(t in ("-u", "-g", "-r", "-ur", "-gr") for t in texts)
    if name == "grep":
        return Opts(args, "efmABCdD").has("-c", "--count")
    return False


def _inert(expr: str, subs: Sequence[Script]) -> bool:
    """Whether an arithmetic expression holds nothing bash could evaluate as code."""
    if _SUBSTITUTION.search(expr) and not all(_prints_a_number(s) for s in subs):
        return False
    # The substitutions print numbers: take each one out, from its `$(` to its `)`.
    text = _KNOWN_NUMBERS.sub("0", _strip_substitutions(expr))
    return bool(_INERT.fullmatch(text))


def _strip_substitutions(expr: str) -> str:
    out, i, n = [], 0, len(expr)
    while i < n:
        if expr.startswith("$((", i):
            i += 1  # nested arithmetic: its own parentheses stay
        elif expr.startswith("$(", i):
            depth, i = 1, i + 2
            while i < n and depth:
                depth += {"(": 1, ")": -1}.get(expr[i], 0)
                i += 1
            out.append("0")
        elif expr[i] == "`":
            end = expr.find("`", i + 1)
            i = n if end < 0 else end + 1
            out.append("0")
        else:
            out.append(expr[i])
            i += 1
    return "".join(out)


def arith_hazard(expr: str, subs: Sequence[Script], where: str) -> str | None:
    if _inert(expr, subs):
        return None
    return f"{where} evaluates a value as arithmetic, where bash can run code ({expr.strip()})"


def param_hazard(inner: str, dialect: Dialect) -> str | None:
    """What `${inner}` may do beyond reading a variable, or None."""
    m = _PARAM.fullmatch(inner)
    if not m:
        return None  # `${#x}`, `${x%%pat}`... forms that only read
    name, subscript, rest = m["name"], m["subscript"], m["rest"]
    if rest[:2] in (":=",) or rest[:1] == "=":
        why = risky_name(name)
        if why:
            return f"${{{name}{rest[:2]}...}} {why}"
    if dialect == "sh":
        return None
    if m["bang"] and not (rest in ("*", "@") or subscript in ("[@]", "[*]")):
        return f"${{!{name}}} reads a variable named at run time"
    if subscript and subscript not in ("[@]", "[*]"):
        reason = arith_hazard(subscript[1:-1], (), f"${{{name}[...]}}")
        if reason:
            return reason
    if (
        rest.startswith(":")
        and rest[1:2] not in ("-", "=", "?", "+")
        and not _OFFSET.fullmatch(rest[1:])
    ):
        return f"${{{name}:...}} evaluates its offset as arithmetic, where bash can run code"
    if rest.startswith("@P"):
        return f"${{{name}@P}} expands a value as a prompt, running what it holds"
    return None


def word_hazard(word: Word, dialect: Dialect) -> str | None:
    """Why a word's expansions can run code bash finds only at run time, or None."""
    for inner in word.params:
        reason = param_hazard(inner, dialect)
        if reason:
            return reason
    if dialect == "bash":
        for expr, subs in word.arith:
            reason = arith_hazard(expr, subs, "$((...))")
            if reason:
                return reason
    return None


def test_hazard(words: Sequence[Word]) -> str | None:
    """`[[ ... ]]` (bash): an arithmetic comparison or a `-v` whose operands are not literal."""
    for i, word in enumerate(words):
        if word.text in _ARITH_TEST and word.literal:
            for operand in (
                words[i - 1] if i else None,
                words[i + 1] if i + 1 < len(words) else None,
            ):
                if operand is None:
                    continue
                expr = operand.text if operand.literal else operand.raw
                subs = operand.subs
                reason = arith_hazard(expr, subs, f"[[ ... {word.text} ... ]]")
                if reason:
                    return reason
        if word.text == "-v" and i + 1 < len(words):
            target = words[i + 1]
            if not (target.literal and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", target.text)):
                return "[[ -v ... ]] evaluates a subscript or a name known only at run time"
    return None
