"""Prompt texts from prompts.json and the seed-001 builders that fill them in."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from kosmos.errors import ConfigError
from kosmos.resources import prompts_path

REQUIRED_KEYS = (
    "SKILL_SYSTEM_PROMPT_WITH_ASK",
    "SKILL_SYSTEM_CONTEXT",
    "SKILL_ACTIVE_SKILL",
    "SKILL_SYSTEM_PART_SEPARATOR",
    "SKILL_INITIAL_REQUEST",
    "SKILL_INITIAL_REQUEST_CUSTOM",
    "SKILL_PARAMETERS",
    "SKILL_PARAMETER_LINE",
    "SKILL_COMMAND_OUTPUT",
    "SKILL_COMMAND_SKIPPED",
    "SKILL_USER_RESPONSE",
    "SKILL_CONTINUE_AFTER_MESSAGE",
    "SKILL_NO_OUTPUT",
    "SKILL_EXIT_CODE",
    "SKILL_TIMED_OUT",
    "SKILL_STOPPED",
    "SKILL_CONNECTION_LOST",
    "SKILL_OUTPUT_OMITTED",
    "SKILL_FORMAT_CORRECTION",
)


def _read(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(f"{path}: cannot read prompts file: {e.strerror}") from e
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}:{e.lineno}: not valid JSON: {e.msg}") from e
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise ConfigError(f"{path}: expected a JSON object of prompt name to text")
    return data


class Prompts:
    """The prompt texts of one run: the shipped prompts.json, with a user file's keys on top."""

    def __init__(self, texts: Mapping[str, str]) -> None:
        missing = [k for k in REQUIRED_KEYS if k not in texts]
        if missing:
            raise ConfigError(f"prompts.json: missing keys: {', '.join(missing)}")
        self.texts = dict(texts)

    @classmethod
    def load(cls, override: Path | None = None) -> Prompts:
        texts = _read(prompts_path())
        if override is not None:
            extra = _read(override)
            unknown = sorted(set(extra) - set(texts))
            if unknown:
                raise ConfigError(
                    f"{override}: unknown prompt keys: {', '.join(unknown)}; "
                    f"known keys: {', '.join(sorted(texts))}"
                )
            texts.update(extra)
        return cls(texts)

    def __getitem__(self, key: str) -> str:
        return self.texts[key]

    # seed 001 section 3: base prompt, optional System Context, Active Skill, in that order.
    def system(
        self,
        skill_name: str,
        skill_body: str,
        knowledge: str | None,
        *,
        base: str = "SKILL_SYSTEM_PROMPT_WITH_ASK",
    ) -> str:
        # `base`: the tags protocol's seed prompt, or the json / tools protocol's own.
        parts = [self[base]]
        if knowledge and knowledge.strip():
            parts.append(self["SKILL_SYSTEM_CONTEXT"].format(knowledge=knowledge.strip()))
        parts.append(
            self["SKILL_ACTIVE_SKILL"].format(skill_name=skill_name, skill_body=skill_body)
        )
        return self["SKILL_SYSTEM_PART_SEPARATOR"].join(parts)

    # seed 001 section 4.1
    def initial(
        self,
        skill_name: str,
        params: Mapping[str, str],
        prompt: str | None,
        step: int,
        max_steps: int,
    ) -> str:
        parameters = ""
        if params:
            lines = "\n".join(
                self["SKILL_PARAMETER_LINE"].format(name=k, value=v) for k, v in params.items()
            )
            parameters = self["SKILL_PARAMETERS"].format(lines=lines)
        if prompt:
            return self["SKILL_INITIAL_REQUEST_CUSTOM"].format(
                prompt=prompt, parameters=parameters, step=step, max_steps=max_steps
            )
        return self["SKILL_INITIAL_REQUEST"].format(
            skill_name=skill_name, parameters=parameters, step=step, max_steps=max_steps
        )

    # seed 001 sections 4.2 - 4.5
    def command_output(self, output: str, step: int, max_steps: int) -> str:
        return self["SKILL_COMMAND_OUTPUT"].format(output=output, step=step, max_steps=max_steps)

    def skipped(self, step: int, max_steps: int) -> str:
        return self["SKILL_COMMAND_SKIPPED"].format(step=step, max_steps=max_steps)

    def user_response(self, response: str, step: int, max_steps: int) -> str:
        return self["SKILL_USER_RESPONSE"].format(response=response, step=step, max_steps=max_steps)

    def continue_after_message(self, step: int, max_steps: int) -> str:
        return self["SKILL_CONTINUE_AFTER_MESSAGE"].format(step=step, max_steps=max_steps)

    def format_correction(self, step: int, max_steps: int) -> str:
        return self["SKILL_FORMAT_CORRECTION"].format(step=step, max_steps=max_steps)
