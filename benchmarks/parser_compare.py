"""kosmos's shell parser against tree-sitter-bash, with bash itself as the judge.

Over the policy's whole differential corpus (tests/policy_corpus.py: the policy tests, the
bundled and kosmos-panel skills, the generated risky forms), each parser is asked two things:

* does the text parse? bash's answer is `bash -n` reading it (syntax only, nothing runs);
* which programs would it run? Where both parsers accept a command, their lists of program
  names (the first word of every simple command, substitutions included) are compared, and
  the commands where they differ are printed for a person to judge.

A parser reads a command correctly when it accepts what bash accepts and rejects the rest.
tree-sitter-bash (MIT) is not a kosmos dependency: install it beside kosmos and its test
extra to run this (`pip install -e '.[test]' tree-sitter tree-sitter-bash`).

    python benchmarks/parser_compare.py [--limit N]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kosmos.safety.shell import (  # noqa: E402
    Compound,
    Function,
    Script,
    ShellSyntaxError,
    Simple,
    Word,
    parse,
)
from tests.policy_corpus import corpus  # noqa: E402


def bash_accepts(text: str) -> bool:
    # The text on stdin: after -c, a text such as `-x` would be read as an option.
    done = subprocess.run(["bash", "-n"], input=text.encode(), capture_output=True)
    return done.returncode == 0


def ours(text: str) -> list[str] | None:
    try:
        script = parse(text, "bash")
    except (ShellSyntaxError, RecursionError):
        return None
    return list(_names(script))


def _names(script: Script) -> Iterator[str]:
    for pipeline in script.pipelines:
        for command in pipeline.commands:
            yield from _command_names(command)


def _command_names(command: object) -> Iterator[str]:
    if isinstance(command, Simple):
        for word in (*command.assigns, *command.words):
            yield from _word_names(word)
        for redirect in command.redirects:
            yield from _word_names(redirect.target)
            for sub in redirect.subs:
                yield from _names(sub)
        if command.words:
            yield command.words[0].text
    elif isinstance(command, Compound):
        for word in command.words:
            yield from _word_names(word)
        for body in command.bodies:
            yield from _names(body)
    elif isinstance(command, Function):
        yield from _command_names(command.body)


def _word_names(word: Word) -> Iterator[str]:
    for sub in word.subs:
        yield from _names(sub)


def tree_sitter_reader():  # returns the parser's own types
    try:
        import tree_sitter_bash
        from tree_sitter import Language, Parser
    except ImportError:
        sys.exit("tree-sitter-bash is not installed: pip install tree-sitter tree-sitter-bash")
    parser = Parser(Language(tree_sitter_bash.language()))

    def read(text: str) -> list[str] | None:
        tree = parser.parse(text.encode())
        names: list[str] = []
        stack = [tree.root_node]
        while stack:
            node = stack.pop()
            if node.type == "ERROR" or node.is_missing:
                return None
            if node.type == "command_name":
                names.append(node.text.decode(errors="replace").strip("'\""))
            stack.extend(reversed(node.children))
        return names

    return read


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, help="only the first N commands of the corpus")
    args = parser.parse_args()
    commands = corpus()[: args.limit]
    readers = {"kosmos": ours, "tree-sitter-bash": tree_sitter_reader()}
    right = dict.fromkeys(readers, 0)
    accepts = dict.fromkeys(readers, 0)
    misread: dict[str, list[str]] = {name: [] for name in readers}
    differ: list[tuple[str, list[str], list[str]]] = []
    valid = 0
    for text in commands:
        accepted = bash_accepts(text)
        valid += accepted
        found = {name: read(text) for name, read in readers.items()}
        for name, names in found.items():
            accepts[name] += names is not None
            if (names is not None) == accepted:
                right[name] += 1
            else:
                misread[name].append(text)
        a, b = found["kosmos"], found["tree-sitter-bash"]
        if accepted and a is not None and b is not None and sorted(a) != sorted(b):
            differ.append((text, a, b))
    print(f"{len(commands)} commands; bash accepts {valid}, rejects {len(commands) - valid}")
    for name in readers:
        print(
            f"{name:>17}: agrees with bash on {right[name]}/{len(commands)} "
            f"(accepts {accepts[name]}; {len(misread[name])} misread)"
        )
    for name, texts in misread.items():
        for text in texts[:6]:
            print(f"  {name} misreads: {text!r}"[:150])
    print(f"both accept, and name different programs: {len(differ)}")
    for text, a, b in differ[:10]:
        print(f"  {text!r}: kosmos {a}, tree-sitter {b}"[:200])


if __name__ == "__main__":
    main()
