"""When to hold the parameter dialogue, and holding it for any front end's dialog."""

from __future__ import annotations

from collections.abc import Callable

from kosmos.config import Settings
from kosmos.engine.params_dialog import DialogStalled, ParamCollector, ParamDialog
from kosmos.events import Emit, Notice
from kosmos.llm.provider import CapabilityRejected
from kosmos.prompts import Prompts
from kosmos.skills.model import Skill


def dialogue_wanted(
    skill: Skill, given: dict[str, str], settings: Settings, *, non_interactive: bool
) -> bool:
    """Missing required params, a person at the terminal, and an LLM that calls tools."""
    if non_interactive or not settings.capabilities()["tools"]:
        return False
    if any(skill.param(name) is None for name in given):
        return False  # resolve_params names the unknown param
    return any(p.required and not (given.get(p.name) or p.default) for p in skill.params)


async def run_dialogue(
    skill: Skill,
    given: dict[str, str],
    settings: Settings,
    prompts: Prompts,
    dialog: ParamDialog,
    *,
    emit: Emit,
    on_fallback: Callable[[str], None],
) -> dict[str, str] | None:
    """The params confirmed in the dialogue (over `given`); None when the LLM turned out not to
    call tools: `on_fallback` hears why, and the front end asks its plain way instead.
    Raises InputNeeded when the operator leaves the dialogue, LLMError when the LLM fails."""
    from kosmos.llm.factory import make_provider  # httpx: not for a screen that never runs one

    provider = make_provider(settings)
    collector = ParamCollector(skill, provider, prompts, dialog, emit=emit, given=given)
    try:
        return {**given, **await collector.collect()}
    except (CapabilityRejected, DialogStalled) as e:
        if isinstance(e, CapabilityRejected) and e.capability != "tools":
            raise
        notice = Notice(message=f"the LLM does not take tool calls; asking plainly ({e})")
        emit(notice)
        on_fallback(notice.message)
        return None
    finally:
        await provider.aclose()
