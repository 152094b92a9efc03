"""The seed-001 protocol end to end: scripted LLM over real HTTP, commands in a real shell."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kosmos.engine.operator import Approval
from kosmos.engine.session import SessionOptions
from kosmos.events import (
    Answer,
    CommandFinished,
    CommandOutput,
    Directive,
    FormatError,
    KnowledgeLoaded,
    LLMRequest,
    LLMRetry,
    Notice,
    dump,
)
from kosmos.hosts.local import LocalRunner
from kosmos.prompts import Prompts
from kosmos.transcript import read_transcript
from tests.helpers import ScriptOperator, make_skill, run_session
from tests.llmserver import Completion, Hang, Raw, ScriptedLLM, Status

BASE = Prompts.load()["SKILL_SYSTEM_PROMPT_WITH_ASK"]


async def test_request_body_has_exactly_the_four_seed_fields(llm: ScriptedLLM) -> None:
    llm.script("[DONE] nothing to do")
    run = await run_session(llm.base_url)
    assert run.result.status == "done" and run.result.exit_code == 0
    req = llm.requests[0]
    assert req.path == "/v1/chat/completions"
    assert set(req.body) == {"model", "messages", "temperature", "max_tokens"}
    assert req.body["model"] == "CHEAP"
    assert req.body["temperature"] == 0.3
    assert req.body["max_tokens"] == 512
    assert "authorization" not in req.headers


@pytest.mark.parametrize("mode", ["full", "last_n"])
async def test_each_request_reports_the_size_of_the_history_it_sends(
    mode: str, llm: ScriptedLLM
) -> None:
    """`sent_messages` and `sent_bytes` are those of the messages sent, as one JSON array of
    UTF-8 (Cyrillic output is two bytes a letter), at every step of a run."""
    llm.script("[CMD] printf 'привет\\n'", "[CMD] echo two", "[CMD] echo three", "[DONE] ok")
    options = SessionOptions(history_mode=mode, history_max=2, policy="auto")
    run = await run_session(llm.base_url, options=options)
    assert run.result.status == "done"
    requests = run.of(LLMRequest)
    assert len(requests) == len(llm.requests) == 4
    kept = []
    for event, sent in zip(requests, llm.requests, strict=True):
        kept += event.new_messages
        assert event.sent_messages == len(sent.messages)
        sent_now = [m for m in kept if m.content in {s["content"] for s in sent.messages}]
        assert len(sent_now) == len(sent.messages)
        dumped = json.dumps([dump(m) for m in sent_now], ensure_ascii=False)
        assert event.sent_bytes == len(dumped.encode())
    assert "привет" in requests[1].new_messages[-1].content
    assert (requests[-1].sent_messages < len(kept)) is (mode == "last_n")


async def test_bearer_header_only_when_a_key_is_set(llm: ScriptedLLM) -> None:
    llm.script("[DONE] ok")
    await run_session(llm.base_url, settings={"api_key": "sk-canary-123"})
    assert llm.requests[0].headers["authorization"] == "Bearer sk-canary-123"


async def test_system_prompt_without_knowledge_is_base_and_active_skill(
    llm: ScriptedLLM, tmp_path: Path
) -> None:
    llm.script("[DONE] ok")
    skill = make_skill("## What I do\nStep one.", name="git-quick-commit")
    await run_session(
        llm.base_url, skill, runner=LocalRunner(cwd=tmp_path, env={"HOME": str(tmp_path)})
    )
    messages = llm.requests[0].messages
    assert messages[0]["role"] == "system"
    assert messages[0]["content"] == (
        BASE + "\n\n--- Active Skill: git-quick-commit ---\n## What I do\nStep one."
    )
    assert "--- System Context ---" not in messages[0]["content"]
    assert "name: git-quick-commit" not in messages[0]["content"]  # frontmatter removed
    assert messages[1] == {
        "role": "user",
        "content": "Execute skill: git-quick-commit\n\n[Step 1 of 100]",
    }


async def test_system_prompt_with_knowledge_has_three_parts_in_order(
    llm: ScriptedLLM, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    (home / ".config/kosmos-panel").mkdir(parents=True)
    (home / ".config/kosmos-panel/ai_system_promt.md").write_text("This host runs nginx.\n")
    llm.script("[DONE] ok")
    run = await run_session(
        llm.base_url,
        make_skill("Body."),
        runner=LocalRunner(cwd=tmp_path, env={"HOME": str(home)}),
    )
    assert llm.requests[0].system == (
        BASE
        + "\n\n--- System Context ---\nThis host runs nginx."
        + "\n\n--- Active Skill: probe ---\nBody."
    )
    loaded = run.of(KnowledgeLoaded)
    assert loaded and loaded[0].path.endswith("ai_system_promt.md")


async def test_the_knowledge_file_spelled_right_is_read_after_the_seeds_spelling(
    llm: ScriptedLLM, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    (home / ".config/kosmos-panel").mkdir(parents=True)
    (home / ".config/kosmos-panel/ai_system_prompt.md").write_text("spelled right")
    llm.script("[DONE] ok", "[DONE] ok")
    runner = LocalRunner(cwd=tmp_path, env={"HOME": str(home)})
    run = await run_session(llm.base_url, runner=runner)
    assert "--- System Context ---\nspelled right" in llm.requests[0].system
    assert run.of(KnowledgeLoaded)[0].path.endswith("ai_system_prompt.md")
    # Where both are there, the seed's spelling wins.
    (home / ".config/kosmos-panel/ai_system_promt.md").write_text("the seed's")
    await run_session(llm.base_url, runner=runner)
    assert "--- System Context ---\nthe seed's" in llm.requests[1].system


async def test_project_knowledge_wins_over_home(llm: ScriptedLLM, tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".config/kosmos-panel").mkdir(parents=True)
    (home / ".config/kosmos-panel/ai_system_promt.md").write_text("home file")
    (tmp_path / ".kosmos-panel").mkdir()
    (tmp_path / ".kosmos-panel/ai_system_promt.md").write_text("project file")
    llm.script("[DONE] ok")
    await run_session(llm.base_url, runner=LocalRunner(cwd=tmp_path, env={"HOME": str(home)}))
    assert "--- System Context ---\nproject file\n\n" in llm.requests[0].system
    assert "home file" not in llm.requests[0].system


async def test_an_unreadable_project_knowledge_file_is_skipped_with_a_warning(
    llm: ScriptedLLM, tmp_path: Path
) -> None:
    """A symbolic link loop cannot be read: the run says so and goes on with the home file."""
    home = tmp_path / "home"
    (home / ".config/kosmos-panel").mkdir(parents=True)
    (home / ".config/kosmos-panel/ai_system_promt.md").write_text("home file")
    (tmp_path / ".kosmos-panel").mkdir()
    (tmp_path / ".kosmos-panel/ai_system_promt.md").symlink_to("ai_system_promt.md")
    llm.script("[DONE] ok")
    run = await run_session(llm.base_url, runner=LocalRunner(cwd=tmp_path, env={"HOME": str(home)}))
    assert run.result.status == "done", run.result.message
    notes = [e.message for e in run.of(Notice)]
    assert notes == [
        "knowledge file skipped: ./.kosmos-panel/ai_system_promt.md: a symbolic link that leads "
        "nowhere (its target is missing, or it loops); fix or remove it"
    ]
    assert "--- System Context ---\nhome file\n\n" in llm.requests[0].system


async def test_initial_request_with_params_and_custom_prompt(llm: ScriptedLLM) -> None:
    llm.script("[DONE] ok", "[DONE] ok")
    await run_session(llm.base_url, params={"path": "/var", "depth": "2"})
    assert llm.requests[0].messages[1]["content"] == (
        "Execute skill: probe\n\nParameters:\n- path: /var\n- depth: 2\n\n[Step 1 of 100]"
    )
    await run_session(
        llm.base_url,
        params={"path": "/var"},
        options=SessionOptions(prompt="Why is /var full?"),
    )
    assert llm.requests[1].messages[1]["content"] == (
        "Why is /var full?\n\nParameters:\n- path: /var\n\n[Step 1 of 100]"
    )


async def test_seed_dialogue_every_user_message_template(llm: ScriptedLLM, tmp_path: Path) -> None:
    llm.script(
        "[CMD] printf ' M server/skills.js\\n?? new-file.txt\\n'",
        "[ASK] Введи сообщение коммита:",
        "[MESSAGE] Коммичу...",
        "[CMD] echo should-be-skipped",
        "[ASK:optional] Хочешь добавить тег?",
        "[DONE] Коммит успешно создан: abc1234",
    )
    operator = ScriptOperator(
        approvals=[Approval.run(), Approval.skip()], answers=["fix: update skills API", None]
    )
    run = await run_session(
        llm.base_url,
        operator=operator,
        runner=LocalRunner(cwd=tmp_path, env={"HOME": str(tmp_path)}),
    )
    assert run.result.status == "done"
    assert run.result.message == "Коммит успешно создан: abc1234"
    assert run.result.steps == 6
    final = llm.requests[-1].messages
    assert [m["role"] for m in final] == ["system"] + ["user", "assistant"] * 5 + ["user"]
    assert final[2]["content"] == "[CMD] printf ' M server/skills.js\\n?? new-file.txt\\n'"
    assert (
        final[3]["content"]
        == "Command output:\n M server/skills.js\n?? new-file.txt\n\n[Step 2 of 100]"
    )
    assert final[4]["content"] == "[ASK] Введи сообщение коммита:"
    assert final[5]["content"] == "User response: fix: update skills API\n\n[Step 3 of 100]"
    assert final[7]["content"] == "[Continue after informational message]\n\n[Step 4 of 100]"
    assert final[9]["content"] == "User skipped the command.\n\n[Step 5 of 100]"
    assert final[10]["content"] == "[ASK:optional] Хочешь добавить тег?"
    assert final[11]["content"] == "User response: \n\n[Step 6 of 100]"
    questions = operator.questions
    assert [q.required for q in questions] == [True, False]
    answers = run.of(Answer)
    assert answers[1].answer is None
    assert [d.kind for d in run.of(Directive)] == ["cmd", "ask", "message", "cmd", "ask", "done"]


async def test_edited_command_runs_and_history_shows_it(llm: ScriptedLLM) -> None:
    llm.script("[CMD] echo proposed", "[DONE] ok")
    operator = ScriptOperator(approvals=[Approval.edit("echo edited")])
    run = await run_session(llm.base_url, operator=operator)
    finished = run.of(CommandFinished)[0]
    assert finished.command == "echo edited"
    second = llm.requests[1].messages
    assert second[2]["content"] == "[CMD] echo edited"
    assert second[3]["content"].startswith("Command output:\nedited\n")


async def test_failing_command_adds_exit_code_line(llm: ScriptedLLM) -> None:
    llm.script("[CMD] echo oops >&2; exit 2", "[DONE] ok")
    await run_session(llm.base_url)
    assert (
        llm.requests[1].last_user_text == "Command output:\noops\n[exit code: 2]\n\n[Step 2 of 100]"
    )


async def test_command_without_output(llm: ScriptedLLM) -> None:
    llm.script("[CMD] true", "[CMD] false", "[DONE] ok")
    await run_session(llm.base_url)
    assert llm.requests[1].last_user_text == "Command output:\n(no output)\n\n[Step 2 of 100]"
    assert llm.requests[2].last_user_text == (
        "Command output:\n(no output)\n[exit code: 1]\n\n[Step 3 of 100]"
    )


@pytest.mark.parametrize(
    ("reply", "kind", "text"),
    [
        ("\n\n   [CMD] uname -a", "cmd", "uname -a"),
        ("[CMD]\nuname -a", "cmd", "uname -a"),
        ("[CMD]\n```bash\nuname -a\n```", "cmd", "uname -a"),
        ("[CMD] uname -a\nThis shows the kernel.", "cmd", "uname -a"),
        ("[ASK]\nWhich port?\nDefault is 80.", "ask", "Which port?\nDefault is 80."),
        ("[MESSAGE] one\ntwo", "message", "one\ntwo"),
    ],
)
async def test_tolerant_reply_forms(llm: ScriptedLLM, reply: str, kind: str, text: str) -> None:
    llm.script(reply, "[DONE] ok")
    run = await run_session(llm.base_url, operator=ScriptOperator(answers=["80"]))
    directive = run.of(Directive)[0]
    assert (directive.kind, directive.text, directive.inferred) == (kind, text, False)


async def test_untagged_reply_is_an_inferred_command_needing_approval(llm: ScriptedLLM) -> None:
    llm.script("uname -s\nThis prints the kernel name.", "[DONE] ok")
    operator = ScriptOperator(approvals=[Approval.run()])
    run = await run_session(llm.base_url, operator=operator)
    assert operator.proposals[0].inferred is True
    assert operator.proposals[0].command == "uname -s"
    assert run.of(Directive)[0].inferred is True
    # seed 001 section 5.6: history keeps "[CMD] <first line>"
    assert llm.requests[1].messages[2]["content"] == "[CMD] uname -s"
    assert run.of(FormatError)[0].count == 1


async def test_non_interactive_answers_untagged_reply_with_a_correction(llm: ScriptedLLM) -> None:
    llm.script("uname -s", "[DONE] ok")
    operator = ScriptOperator()
    run = await run_session(
        llm.base_url, operator=operator, options=SessionOptions(non_interactive=True)
    )
    assert operator.proposals == []  # never run, never even proposed
    correction = llm.requests[1].last_user_text
    for tag in ("[CMD]", "[ASK]", "[ASK:optional]", "[MESSAGE]", "[DONE]"):
        assert tag in correction
    assert correction.endswith("[Step 2 of 100]")
    assert run.result.status == "done"


async def test_three_format_errors_in_a_row_fail_the_run(llm: ScriptedLLM) -> None:
    llm.script("hmm", "I am not sure", "", "[DONE] never reached")
    run = await run_session(llm.base_url, options=SessionOptions(non_interactive=True))
    assert run.result.status == "failed" and run.result.exit_code == 1
    assert "3 times in a row" in run.result.message
    assert "last reply: ''" in run.result.message
    assert len(llm.requests) == 3


async def test_format_error_count_resets_after_a_tagged_reply(llm: ScriptedLLM) -> None:
    llm.script("hmm", "hmm", "[MESSAGE] ok", "hmm", "hmm", "[DONE] fine")
    run = await run_session(llm.base_url, options=SessionOptions(non_interactive=True))
    assert run.result.status == "done"


async def test_step_limit_ends_the_run_with_exit_3(llm: ScriptedLLM) -> None:
    llm.script(*["[MESSAGE] working"] * 5)
    run = await run_session(llm.base_url, options=SessionOptions(max_steps=3))
    assert run.result.status == "step_limit" and run.result.exit_code == 3
    assert len(llm.requests) == 3
    assert llm.requests[2].last_user_text.endswith("[Step 3 of 3]")
    assert "--max-steps" in run.result.message


async def test_step_limit_says_the_last_command_was_not_run(llm: ScriptedLLM) -> None:
    llm.script("[CMD] echo one", "[CMD] echo two")
    run = await run_session(
        llm.base_url, options=SessionOptions(max_steps=2, policy="auto", non_interactive=True)
    )
    assert run.result.status == "step_limit"
    assert "its last command was not run (echo two)" in run.result.message
    assert [e.command for e in run.events if e.type == "command_started"] == ["echo one"]


async def test_history_modes(llm: ScriptedLLM) -> None:
    script = ["[MESSAGE] a", "[MESSAGE] b", "[MESSAGE] c", "[MESSAGE] d", "[DONE] ok"]
    llm.script(*script)
    await run_session(llm.base_url)
    assert len(llm.requests[-1].messages) == 10  # full: everything

    llm.requests.clear()
    llm.script(*script)
    await run_session(llm.base_url, options=SessionOptions(history_mode="last_n", history_max=4))
    last = llm.requests[-1].messages
    assert [m["role"] for m in last] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert last[1]["content"].startswith("Execute skill: probe")
    assert last[2]["content"] == "[MESSAGE] c"

    llm.requests.clear()
    llm.script(*script)
    await run_session(llm.base_url, options=SessionOptions(history_mode="system_only"))
    last = llm.requests[-1].messages
    assert [m["role"] for m in last] == ["system", "user"]
    assert last[1]["content"].endswith("[Step 5 of 100]")


async def test_history_mode_from_the_skill_frontmatter_reaches_the_run(llm: ScriptedLLM) -> None:
    skill = make_skill(history_mode="system_only")
    assert skill.history_mode == "system_only"


async def test_retry_on_500_then_success(llm: ScriptedLLM) -> None:
    llm.script(Status(500), Status(503), "[DONE] ok")
    run = await run_session(llm.base_url)
    assert run.result.status == "done"
    retries = run.of(LLMRetry)
    assert [r.attempt for r in retries] == [1, 2]
    assert 0.3 <= retries[0].delay_s <= 0.7
    assert 0.7 <= retries[1].delay_s <= 1.3


async def test_429_honours_retry_after(llm: ScriptedLLM) -> None:
    llm.script(Status(429, headers={"Retry-After": "1"}), "[DONE] ok")
    run = await run_session(llm.base_url)
    assert run.result.status == "done"
    assert run.of(LLMRetry)[0].delay_s == 1.0
    gap = llm.requests[1].at - llm.requests[0].at
    assert gap >= 0.95


async def test_500_after_all_retries_is_exit_5(llm: ScriptedLLM) -> None:
    llm.script(Status(500), Status(500), Status(500))
    run = await run_session(llm.base_url)
    assert run.result.exit_code == 5
    assert "3 attempts" in run.result.message and "HTTP 500" in run.result.message
    assert len(llm.requests) == 3


async def test_401_names_the_key_and_is_not_retried(llm: ScriptedLLM) -> None:
    llm.script(Status(401, {"error": {"message": "invalid api key"}}))
    run = await run_session(llm.base_url, settings={"api_key": "sk-secret-canary"})
    assert run.result.exit_code == 5
    assert "KOSMOS_API_KEY" in run.result.message
    assert "sk-secret-canary" not in run.result.message
    assert len(llm.requests) == 1


async def test_llm_that_hangs_past_the_timeout(llm: ScriptedLLM) -> None:
    llm.script(Hang(3), Hang(3))
    run = await run_session(llm.base_url, settings={"llm_timeout": 0.5, "llm_retries": 1})
    assert run.result.exit_code == 5
    assert "did not answer within 0.5 s" in run.result.message


async def test_garbage_body_is_a_clear_error(llm: ScriptedLLM) -> None:
    llm.script(Raw(b"<html>proxy error</html>", "text/html"))
    run = await run_session(llm.base_url)
    assert run.result.exit_code == 5
    assert "not JSON" in run.result.message and "proxy error" in run.result.message


async def test_json_that_is_not_a_completion(llm: ScriptedLLM) -> None:
    llm.script(Raw(json.dumps({"status": "ok"}).encode()))
    run = await run_session(llm.base_url)
    assert run.result.exit_code == 5
    assert "not with a chat completion" in run.result.message


async def test_connection_refused_says_how_to_start_a_server() -> None:
    run = await run_session("http://127.0.0.1:9/v1", settings={"llm_retries": 0})
    assert run.result.exit_code == 5
    assert "connection refused, 1 attempt)" in run.result.message
    assert "AI_KOSMOS_MODEL_BASE_URL" in run.result.message


async def test_operator_retry_resends_the_same_request(llm: ScriptedLLM) -> None:
    llm.script(Status(500), Status(500), Status(500), "[DONE] ok")
    operator = ScriptOperator(retries=[True])
    run = await run_session(llm.base_url, operator=operator)
    assert run.result.status == "done"
    assert len(operator.errors) == 1
    assert llm.requests[3].body["messages"] == llm.requests[0].body["messages"]


async def test_null_content_counts_as_a_format_error(llm: ScriptedLLM) -> None:
    llm.script(Completion(content=None), "[DONE] ok")
    run = await run_session(llm.base_url, options=SessionOptions(non_interactive=True))
    assert run.of(FormatError)[0].reply == ""
    assert run.result.status == "done"


async def test_output_streams_live_before_the_command_ends(llm: ScriptedLLM) -> None:
    llm.script("[CMD] echo first; sleep 0.3; echo second", "[DONE] ok")
    run = await run_session(llm.base_url)
    chunks = run.of(CommandOutput)
    assert len(chunks) >= 2
    assert chunks[0].text == "first\n"


async def test_an_unexpected_error_ends_the_run_with_one_line_and_its_result(
    llm: ScriptedLLM, tmp_path: Path
) -> None:
    """A fault kosmos has no message for (here the runner's working folder vanished) still
    ends the run as a result: one line naming it, exit 1, the transcript closed."""
    gone = tmp_path / "gone"
    gone.mkdir()
    runner = LocalRunner(cwd=gone)
    gone.rmdir()
    llm.script("[CMD] echo hello")
    transcript = tmp_path / "run.jsonl"
    run = await run_session(llm.base_url, runner=runner, transcript=transcript)
    assert (run.result.status, run.result.exit_code) == ("error", 1)
    message = run.result.message
    assert "\n" not in message
    assert message.startswith("step 1: unexpected FileNotFoundError while running a command: ")
    assert str(gone) in message and "kosmos/hosts/local.py:" in message
    assert "report it as a kosmos bug" in message
    assert read_transcript(transcript)[-1].type == "result"


async def test_a_skill_file_warning_is_a_notice_once(llm: ScriptedLLM, tmp_path: Path) -> None:
    skill = make_skill(name="q", extra='"unterminated')
    assert skill.warnings
    llm.script("[DONE] ok")
    run = await run_session(llm.base_url, skill, runner=LocalRunner(cwd=tmp_path))
    notices = [e.message for e in run.events if e.type == "warning"]
    assert notices == [f"skill file: {skill.warnings[0]}"]
