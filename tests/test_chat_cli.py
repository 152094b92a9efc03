"""`kosmos chat` as a user runs it: a subprocess, stdin, the example config and services."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.chatkit import closed_port, example_chat, load_services_module, relevant, select
from tests.conftest import run_cli
from tests.llmserver import ScriptedLLM

SERVICES = load_services_module()

SKILL = """---
name: probe
description: Check whether a systemd unit is healthy
params:
  - name: unit
    description: the unit to check
    required: true
    max_length: 40
---
## What I do
Check the unit.
"""


def write_config(cwd: Path, chat: dict[str, Any]) -> None:
    (cwd / "kosmos.yaml").write_text(yaml.safe_dump({"chat": chat}), encoding="utf-8")


def test_rag_in_russian_from_the_locale(
    llm: ScriptedLLM, services: Any, cli_env: dict[str, str], tmp_path: Path
) -> None:
    write_config(tmp_path, example_chat(services.base_url, skills=False))
    llm.script(relevant(), select("rag_search", question="Что такое kosmos?"))
    env = {**cli_env, "LANG": "ru_RU.UTF-8"}
    log = tmp_path / "chat.log"
    result = run_cli(
        ["chat", "--log", str(log)], env=env, cwd=tmp_path, stdin="Что такое kosmos?\nq\n"
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout.splitlines()
    assert out[0] == "Привет! Я агент kosmos: опишите простыми словами, что нужно сделать."
    steps = out[out.index("Анализирую релевантность запроса..") :]
    assert steps[:8] == [
        "Анализирую релевантность запроса..",
        "Запрос релевантен, думаю..",
        "Выбираю подходящий инструмент..",
        'Выбран инструмент rag_search с параметрами question="Что такое kosmos?"',
        "Валидирую инструмент..",
        "Инструмент rag_search проверен и готов к вызову. Запрос: Что такое kosmos?",
        "Выполняю инструмент..",
        "Ответ RAG: kosmos запускает ИИ-навыки на серверах: LLM проходит SKILL.md шаг за шагом, "
        "а kosmos выполняет предложенные команды локально или по SSH.",
    ]
    assert steps[8].startswith("Заголовки топ-2 документов: Что такое kosmos, ")
    assert out[-1] == "До свидания!"
    assert f"log: {log}" in result.stderr
    assert "[exec] rag_chunks_message:" in log.read_text()


def test_english_flag_and_exit(llm: ScriptedLLM, cli_env: dict[str, str], tmp_path: Path) -> None:
    env = {**cli_env, "LANG": "ru_RU.UTF-8"}
    result = run_cli(["chat", "--lang", "en"], env=env, cwd=tmp_path, stdin="/help\n/quit\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "Goodbye!"
    assert result.stdout.count("What I can do:") == 2
    # The default log lives in the state directory.
    logs = list((Path(cli_env["HOME"]) / ".local/state/kosmos/chat").glob("*.log"))
    assert len(logs) == 1
    assert "AgentEnd" in logs[0].read_text()


def test_unreachable_llm_exits_5(cli_env: dict[str, str], tmp_path: Path) -> None:
    env = {**cli_env, "AI_KOSMOS_MODEL_BASE_URL": f"http://127.0.0.1:{closed_port()}/v1"}
    (tmp_path / "kosmos.yaml").write_text("llm_retries: 0\n", encoding="utf-8")
    result = run_cli(["chat", "--lang", "en"], env=env, cwd=tmp_path, stdin="what is kosmos\n")
    assert result.returncode == 5
    assert result.stdout.splitlines()[-1] == "LLM request failed, exiting.."
    # The reason and what to do, on stderr in one line.
    assert "kosmos: cannot reach the LLM at http://127.0.0.1:" in result.stderr
    assert "--base-url" in result.stderr


def test_a_service_down_keeps_the_seed_text_and_says_why_on_stderr(
    llm: ScriptedLLM, cli_env: dict[str, str], tmp_path: Path
) -> None:
    down = f"http://127.0.0.1:{closed_port()}/rag"
    chat = example_chat("http://127.0.0.1:1", skills=False)
    for tool in chat["tools"]:
        tool["base_url"] = down
    write_config(tmp_path, chat)
    llm.script(relevant(), select("rag_search", question="What is kosmos?"))
    result = run_cli(["chat", "--lang", "en"], env=cli_env, cwd=tmp_path, stdin="kosmos?\nq\n")
    assert result.returncode == 0, result.stderr
    out = result.stdout.splitlines()
    assert out[out.index("Running the tool..") + 1].startswith("A terrible error happened")
    assert "ConnectError" not in result.stdout
    reason = [line for line in result.stderr.splitlines() if "rag_search" in line]
    assert len(reason) == 1, result.stderr
    assert reason[0].startswith(
        f"kosmos: rag_search: health check GET {down}/health failed: ConnectError: "
    )


def test_a_chat_turn_on_gemini(
    llm: ScriptedLLM, services: Any, cli_env: dict[str, str], tmp_path: Path
) -> None:
    write_config(tmp_path, example_chat(services.base_url, skills=False))
    llm.script(relevant(), select("rag_search", question="What is kosmos?"))
    env = {**cli_env, "GEMINI_API_KEY": "AIza-chat-key"}
    log = tmp_path / "chat.log"
    result = run_cli(
        ["chat", "--provider", "gemini", "--base-url", llm.gemini_base_url, "--lang", "en"]
        + ["--log", str(log), "--verbose"],
        env=env,
        cwd=tmp_path,
        stdin="What is kosmos?\nq\n",
    )
    assert result.returncode == 0, result.stderr
    assert 'Chose tool rag_search with parameters question="What is kosmos?"' in result.stdout
    assert "RAG answer: kosmos runs AI skills against servers." in result.stdout
    assert result.stdout.splitlines()[-1] == "Goodbye!"
    # Both structured requests went out as generateContent, with Google's key header.
    assert [r.path for r in llm.requests] == ["/v1beta/models/gemini-2.0-flash:generateContent"] * 2
    first = llm.requests[0]
    assert first.headers["x-goog-api-key"] == "AIza-chat-key"
    assert "authorization" not in {k.lower() for k in first.headers}
    assert first.capabilities_used() == {"json_schema"}
    assert "systemInstruction" in first.body
    assert first.contents[-1]["parts"][-1]["text"].endswith("What is kosmos?")
    # The verbose log has the bodies, the key masked.
    text = log.read_text(encoding="utf-8")
    assert "chat // payload" in text and '"contents"' in text
    assert "AIza-chat-key" not in text


def test_a_skill_runs_on_local_with_approval_and_transcript(
    llm: ScriptedLLM, cli_env: dict[str, str], tmp_path: Path
) -> None:
    skill_dir = tmp_path / "my-skills" / "probe"
    skill_dir.mkdir(parents=True)
    (skill_dir / "SKILL.md").write_text(SKILL, encoding="utf-8")
    llm.script(relevant(), select("probe", unit="cron"))
    llm.script("[CMD] echo probe-$((6*7))", "[DONE] cron is fine")
    log = tmp_path / "chat.log"
    result = run_cli(
        ["chat", "--host", "local", "--lang", "en", "--log", str(log), "--skills-dir", "my-skills"],
        env=cli_env,
        cwd=tmp_path,
        stdin="is cron healthy?\ny\nq\n",
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "probe: Check whether a systemd unit is healthy" in out
    assert "$ echo probe-$((6*7))" in out
    assert "probe-42" in out
    assert "Skill probe finished: cron is fine" in out
    assert out.splitlines()[-1] == "Goodbye!"
    assert "Run? [y/N/e/a]" in result.stderr
    assert "- unit: cron" in llm.requests[2].last_user_text
    transcripts = list((Path(cli_env["HOME"]) / ".local/state/kosmos/runs").rglob("*.jsonl"))
    assert len(transcripts) == 1
    assert '"command": "echo probe-$((6*7))"' in transcripts[0].read_text()
    assert "[exec] run_skill // probe: done" in log.read_text()


def test_bad_chat_config_is_a_usage_error(cli_env: dict[str, str], tmp_path: Path) -> None:
    write_config(tmp_path, {"tools": [{"name": "x", "description": "d", "path": "/a"}]})
    result = run_cli(["chat"], env=cli_env, cwd=tmp_path, stdin="q\n")
    assert result.returncode == 2
    assert "chat.tools.0.base_url" in result.stderr


def test_a_skill_runs_over_ssh(
    llm: ScriptedLLM, cli_env: dict[str, str], tmp_path: Path, remote: Any
) -> None:
    from tests.sshd import write_client_home

    write_client_home(Path(cli_env["HOME"]), remote, alias="box")
    skill_dir = tmp_path / ".kosmos" / "skills" / "probe"
    skill_dir.mkdir(parents=True)
    (skill_dir / "SKILL.md").write_text(SKILL, encoding="utf-8")
    llm.script(relevant(), select("probe", unit="sshd"))
    llm.script("[CMD] echo on-$(whoami)", "[DONE] sshd is fine")
    llm.script(relevant(), select("probe", unit="cron"))
    llm.script("[CMD] echo again-$(whoami)", "[DONE] cron is fine")
    result = run_cli(
        ["chat", "--host", "box", "--lang", "en"],
        env=cli_env,
        cwd=tmp_path,
        stdin="check sshd\ny\nand cron?\ny\nq\n",
    )
    assert result.returncode == 0, result.stderr
    assert f"on-{remote.user}" in result.stdout
    assert f"again-{remote.user}" in result.stdout
    assert "Skill probe finished: sshd is fine" in result.stdout
    assert "Skill probe finished: cron is fine" in result.stdout
    assert f"on-{remote.user}" in llm.requests[3].last_user_text


def test_a_log_that_cannot_be_written_is_a_usage_error(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "file").write_text("")
    result = run_cli(
        ["chat", "--log", str(tmp_path / "file" / "chat.log")], env=cli_env, cwd=tmp_path
    )
    assert result.returncode == 2
    assert result.stderr.startswith(f"kosmos: {tmp_path / 'file' / 'chat.log'}: cannot write")
