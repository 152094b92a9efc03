"""Skills as chat tools: their params validated like the HTTP tools', a chosen one run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kosmos.chat.catalog import TEXTS
from kosmos.skills.model import Skill
from tests.chatkit import (
    SessionSkillRunner,
    converse,
    example_chat,
    load_services_module,
    relevant,
    select,
    settings_for,
)
from tests.helpers import make_skill
from tests.llmserver import ScriptedLLM

SERVICES = load_services_module()


def ru(key: str, **values: Any) -> str:
    return TEXTS[key][1].format(**values)


def en(key: str, **values: Any) -> str:
    return TEXTS[key][0].format(**values)


# -- skills as tools -------------------------------------------------------------------------

SKILL_PARAMS = (
    "[{name: unit, description: the systemd unit, required: true, max_length: 12},"
    " {name: mode, choices: [short, full], default: short}]"
)


def svc_skill() -> Skill:
    return make_skill("## What I do\nCheck a unit.", name="svc-check", params=SKILL_PARAMS)


@pytest.mark.parametrize(
    ("params", "text", "log"),
    [
        ({}, ru("unclear"), "Missing Param: svc-check::unit"),
        ({"unit": " "}, ru("unclear"), "Empty Param: svc-check::unit"),
        (
            {"unit": "u" * 13},
            ru("too_long", param="unit", max=12),
            "Too Long Param: svc-check::unit",
        ),
        (
            {"unit": "cron", "mode": "long"},
            ru("bad_choice", param="mode", choices="short, full"),
            "Bad Choice Param: svc-check::mode",
        ),
    ],
)
async def test_skill_validation_branches(
    llm: ScriptedLLM, services: Any, log_path: Path, params: dict, text: str, log: str
) -> None:
    runner = SessionSkillRunner(llm.base_url)
    llm.script(relevant(), select("svc-check", **params))
    settings = settings_for(llm.base_url, example_chat(services.base_url))
    chat = await converse(
        settings, ["check"], log_path, lang="ru", skills=[svc_skill()], skill_runner=runner
    )
    assert chat.agent.history[-1].content == text
    assert chat.logged("WARNING", "valid", f"validate_tool_call // {log}")
    assert runner.runs == []


async def test_a_chosen_skill_runs_through_the_session_engine(
    llm: ScriptedLLM, services: Any, log_path: Path
) -> None:
    runner = SessionSkillRunner(llm.base_url)
    llm.script(relevant(), select("svc-check", unit="cron"))
    llm.script("[CMD] echo unit-$((6*7))", "[DONE] cron is healthy")
    settings = settings_for(llm.base_url, example_chat(services.base_url))
    chat = await converse(
        settings, ["is cron ok?"], log_path, skills=[svc_skill()], skill_runner=runner
    )
    said = chat.out.text
    assert 'Chose tool svc-check with parameters unit="cron"' in said
    assert 'Parameters: unit="cron", mode="short"' in said
    assert runner.runs == [("svc-check", {"unit": "cron", "mode": "short"})]
    assert chat.out.said[-2] == ("result", "Skill svc-check finished: cron is healthy")
    assert chat.agent.history[-1].content == "Skill svc-check finished: cron is healthy"
    skill_request = llm.requests[2]
    assert "- unit: cron" in skill_request.last_user_text
    assert "unit-42" in llm.requests[3].last_user_text
    assert chat.logged("DEBUG", "exec", "run_skill // svc-check: done")
    # The selection prompt described the skill with its params and limits.
    assert (
        "param unit (required, at most 12 characters): the systemd unit" in llm.requests[1].system
    )


async def test_a_failed_skill_is_reported_and_the_chat_goes_on(
    llm: ScriptedLLM, services: Any, log_path: Path
) -> None:
    runner = SessionSkillRunner(llm.base_url)
    llm.script(relevant(), select("svc-check", unit="cron"), "no tag", "no tag", "no tag")
    llm.script(relevant(False))
    settings = settings_for(llm.base_url, example_chat(services.base_url))
    chat = await converse(
        settings, ["is cron ok?", "hi"], log_path, skills=[svc_skill()], skill_runner=runner
    )
    said = [t for _, t in chat.out.said]
    failed = next(t for t in said if t.startswith("Skill svc-check ended (failed): "))
    assert "without one of the tags" in failed
    assert en("irrelevant") in said
    assert any("ERROR    [exec] run_skill // svc-check: failed: " in x for x in chat.log_lines)


async def test_triggers_and_a_block_description_reach_classification_and_selection(
    llm: ScriptedLLM, services: Any, log_path: Path
) -> None:
    # A kosmos-panel skill: a `description: |` block over lines, and trigger phrases.
    skill = make_skill(
        "## What I do\nCheck a unit.",
        name="disk-check",
        description="|\n  Shows what fills the disk,\n  folder by folder.",
        triggers="\n  - место на диске\n  - disk full",
    )
    llm.script(relevant(False))
    settings = settings_for(llm.base_url, example_chat(services.base_url))
    chat = await converse(settings, ["диск забит?"], log_path, skills=[skill])
    classify = llm.requests[0].system
    assert "- disk-check: Shows what fills the disk, folder by folder." in classify
    assert 'asked for as: "место на диске", "disk full"' in classify
    assert chat.agent.help_text().count("disk-check") == 1
    assert "• disk-check: Shows what fills the disk, folder by folder" in chat.agent.help_text()
