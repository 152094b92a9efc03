"""Prompt texts from prompts.json and the builders that fill them in (docs/protocol.md)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
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


# The Target OS block of the memory prompt, per OS; any other OS gets the POSIX one by name.
TARGET_OS_KEYS = {
    "Linux": "SKILL_TARGET_OS_LINUX",
    "macOS": "SKILL_TARGET_OS_MACOS",
    "FreeBSD": "SKILL_TARGET_OS_FREEBSD",
    "Windows": "SKILL_TARGET_OS_WINDOWS",
}


@dataclass(frozen=True)
class SystemParts:
    """What the system prompt is built from.

    `memory_index` set (--memory): the memory prompt, opened by the Target OS block of
    `target_os` and closed by the Current Memory Index; None: the plain prompt, word for word.
    """

    skill_name: str
    skill_body: str
    knowledge: str | None = None
    target_os: str | None = None
    memory_index: str | None = None


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

    # docs/protocol.md, The system prompt: base, System Context (if any), Active Skill.
    def system(
        self,
        parts: SystemParts,
        *,
        base: str = "SKILL_SYSTEM_PROMPT_WITH_ASK",
        memory_base: str = "SKILL_SYSTEM_PROMPT_MEMORY",
    ) -> str:
        """`base`: the tags protocol's prompt, or the json / tools protocol's own;
        `memory_base`: what replaces it with --memory (kosmos's memory prompt)."""
        memory = parts.memory_index is not None
        head = self[base]
        if memory:
            head = f"{self.target_os_block(parts.target_os)}\n\n{self[memory_base]}"
        blocks = [head]
        if parts.knowledge and parts.knowledge.strip():
            blocks.append(self["SKILL_SYSTEM_CONTEXT"].format(knowledge=parts.knowledge.strip()))
        blocks.append(
            self["SKILL_ACTIVE_SKILL"].format(
                skill_name=parts.skill_name, skill_body=parts.skill_body
            )
        )
        if memory:
            blocks.append(self["SKILL_MEMORY_INDEX_BLOCK"].format(index=parts.memory_index))
        return self["SKILL_SYSTEM_PART_SEPARATOR"].join(blocks)

    def target_os_block(self, os_name: str | None) -> str:
        key = TARGET_OS_KEYS.get(os_name or "")
        if key is not None:
            return self[key]
        return self["SKILL_TARGET_OS_OTHER"].format(os=os_name or "unknown (assume POSIX)")

    def skill_folder(self, base: str, files: list[str]) -> str:
        """What ends the Active Skill block of a skill with files beside its SKILL.md.

        Commands run where the host's shell starts (the login directory, or kosmos's own on
        `local`), as every other command and `[GET-FILE]` do: a skill's relative paths
        would otherwise change meaning with the skill. The block says so, with a full path
        to copy."""
        listed = "\n".join(self["SKILL_FOLDER_FILE"].format(path=f) for f in files)
        shown = next((f for f in files if f.startswith("scripts/")), files[0] if files else "")
        example = f"{base.rstrip('/')}/{shown}"
        return self["SKILL_FOLDER"].format(base=base, files=listed, example=example)

    # docs/protocol.md, The first request
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

    # docs/protocol.md, Replies
    def command_output(self, output: str, step: int, max_steps: int) -> str:
        return self["SKILL_COMMAND_OUTPUT"].format(output=output, step=step, max_steps=max_steps)

    def skipped(self, step: int, max_steps: int) -> str:
        return self["SKILL_COMMAND_SKIPPED"].format(step=step, max_steps=max_steps)

    def user_response(self, response: str, step: int, max_steps: int) -> str:
        return self["SKILL_USER_RESPONSE"].format(response=response, step=step, max_steps=max_steps)

    def continue_after_message(self, step: int, max_steps: int) -> str:
        return self["SKILL_CONTINUE_AFTER_MESSAGE"].format(step=step, max_steps=max_steps)

    def action_result(self, result: str, step: int, max_steps: int) -> str:
        """A [GET-FILE] or memory result (`File content:`, `Memory error:`...) and the step."""
        return self["SKILL_ACTION_RESULT"].format(result=result, step=step, max_steps=max_steps)

    def format_correction(self, step: int, max_steps: int) -> str:
        return self["SKILL_FORMAT_CORRECTION"].format(step=step, max_steps=max_steps)
