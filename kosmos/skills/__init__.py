"""Skills: SKILL.md files (frontmatter + Markdown steps), where they are found, their parameters."""

from kosmos.skills.discovery import SkillLibrary, SkillSource, find_remote_skill, list_remote_skills
from kosmos.skills.loader import load_skill_file, parse_skill
from kosmos.skills.model import Param, Skill
from kosmos.skills.params import parse_param_flags, resolve_params, validate_value

__all__ = [
    "Param",
    "Skill",
    "SkillLibrary",
    "SkillSource",
    "find_remote_skill",
    "list_remote_skills",
    "load_skill_file",
    "parse_param_flags",
    "parse_skill",
    "resolve_params",
    "validate_value",
]
