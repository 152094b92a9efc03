"""The reply parser on its own: seed 001 section 5 and the tolerant forms small models produce."""

from __future__ import annotations

import pytest

from kosmos.engine.parser import NoDirective, parse_reply


@pytest.mark.parametrize(
    ("reply", "kind", "text", "required", "canonical"),
    [
        (
            "[CMD] git status --porcelain",
            "cmd",
            "git status --porcelain",
            True,
            "[CMD] git status --porcelain",
        ),
        (
            "[ASK] Введи сообщение коммита:",
            "ask",
            "Введи сообщение коммита:",
            True,
            "[ASK] Введи сообщение коммита:",
        ),
        (
            "[ASK:optional] Хочешь добавить тег?",
            "ask",
            "Хочешь добавить тег?",
            False,
            "[ASK:optional] Хочешь добавить тег?",
        ),
        (
            "[MESSAGE] Обрабатываю папку 1 из 3...",
            "message",
            "Обрабатываю папку 1 из 3...",
            True,
            "[MESSAGE] Обрабатываю папку 1 из 3...",
        ),
        (
            "[DONE] Коммит успешно создан: abc1234",
            "done",
            "Коммит успешно создан: abc1234",
            True,
            "[DONE] Коммит успешно создан: abc1234",
        ),
        ("[DONE]", "done", "Skill completed", True, "[DONE] Skill completed"),
        ("\n\n  [CMD] ls", "cmd", "ls", True, "[CMD] ls"),
        ("[CMD]\nls -la\n", "cmd", "ls -la", True, "[CMD] ls -la"),
        (
            "[CMD]\n```bash\ncd /tmp &&\n  ls\n```\nthat lists",
            "cmd",
            "cd /tmp &&\n  ls",
            True,
            "[CMD] cd /tmp &&\n  ls",
        ),
        ("[CMD] ```bash df -h```", "cmd", "df -h", True, "[CMD] df -h"),
        ("[CMD] `uptime`", "cmd", "uptime", True, "[CMD] uptime"),
        ("[CMD] $ uptime", "cmd", "uptime", True, "[CMD] uptime"),
        ("[CMD] ls -la\nThis lists files.", "cmd", "ls -la", True, "[CMD] ls -la"),
        (
            "[CMD] tar czf a.tgz \\\n   /etc",
            "cmd",
            "tar czf a.tgz /etc",
            True,
            "[CMD] tar czf a.tgz /etc",
        ),
        ("**[CMD]** uname", "cmd", "uname", True, "[CMD] uname"),
        ("[cmd] uname", "cmd", "uname", True, "[CMD] uname"),
        ("[ASK: optional] tag?", "ask", "tag?", False, "[ASK:optional] tag?"),
        ("[CMD]: uname", "cmd", "uname", True, "[CMD] uname"),
        ("Sure, let me check.\n[CMD] uname", "cmd", "uname", True, "[CMD] uname"),
        ("[MESSAGE] one\n[CMD] rm -rf /", "message", "one", True, "[MESSAGE] one"),
        (
            "[ASK]\nWhich port?\nDefault 80.",
            "ask",
            "Which port?\nDefault 80.",
            True,
            "[ASK] Which port?\nDefault 80.",
        ),
    ],
)
def test_tagged_forms(reply: str, kind: str, text: str, required: bool, canonical: str) -> None:
    parsed = parse_reply(reply)
    assert (parsed.kind, parsed.text, parsed.required, parsed.inferred) == (
        kind,
        text,
        required,
        False,
    )
    assert parsed.canonical == canonical


@pytest.mark.parametrize(
    ("reply", "command"),
    [
        ("uname -a", "uname -a"),
        ("uname -a\nshows the kernel", "uname -a"),
        ("```\ndf -h\n```", "df -h"),
        ("I will run [CMD] ls", "I will run [CMD] ls"),
    ],
)
def test_untagged_reply_is_an_inferred_first_line_command(reply: str, command: str) -> None:
    parsed = parse_reply(reply)
    assert parsed.inferred and parsed.kind == "cmd" and parsed.text == command
    assert parsed.canonical == f"[CMD] {command}"


@pytest.mark.parametrize("reply", ["", "   \n  ", "[CMD]", "[CMD]\n\n", "[ASK]", "[MESSAGE]  "])
def test_nothing_to_act_on(reply: str) -> None:
    with pytest.raises(NoDirective):
        parse_reply(reply)
