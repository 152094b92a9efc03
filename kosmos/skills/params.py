"""Skill parameters: `--param KEY=VALUE` flags, defaults, asking for missing ones, the rules."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from kosmos.errors import ParamError
from kosmos.skills.model import Param, Skill

Ask = Callable[[Param], str | None]


def parse_param_flags(values: Sequence[str]) -> dict[str, str]:
    """`["unit=nginx", "since="]` -> `{"unit": "nginx", "since": ""}`; a later key wins."""
    params: dict[str, str] = {}
    for value in values:
        key, sep, rest = value.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ParamError(
                f"--param {value!r}: expected KEY=VALUE, for example --param unit=nginx.service"
            )
        params[key] = rest
    return params


def validate_value(param: Param, value: str) -> str | None:
    """What is wrong with `value` for `param` (for a form to show beside the field), or None."""
    if param.choices is not None and value not in param.choices:
        return f"must be one of: {', '.join(param.choices)} (got {_short(value)})"
    if param.max_length is not None and len(value) > param.max_length:
        return f"must be at most {param.max_length} characters (got {len(value)})"
    return None


def resolve_params(
    skill: Skill, given: Mapping[str, str], *, ask: Ask | None = None
) -> dict[str, str]:
    """The parameters a run starts with: declared params in order (given, else default, else
    asked), then, for a skill that declares none, whatever was given (kosmos-panel skills take
    free-form params).

    An empty value counts as not given. `ask` is called once per missing required param; it
    returns the operator's answer, or None (or "") to decline. An answer that breaks a rule
    raises ParamError: a front end that wants to re-ask checks with `validate_value` before
    returning it.
    """
    declared = {p.name for p in skill.params}
    if skill.params:
        unknown = [k for k in given if k not in declared]
        if unknown:
            names = ", ".join(f"'{k}'" for k in unknown)
            raise ParamError(
                f"skill '{skill.name}' has no param {names}; "
                f"its params: {', '.join(p.name for p in skill.params)}"
            )
    resolved: dict[str, str] = {}
    missing: list[Param] = []
    for param in skill.params:
        value = given.get(param.name) or None
        if value is None and param.default is not None:
            value = param.default
        if value is None and param.required and ask is not None:
            value = ask(param) or None
        if value is None:
            if param.required:
                missing.append(param)
            continue
        problem = validate_value(param, value)
        if problem is not None:
            raise ParamError(f"skill '{skill.name}': param '{param.name}' {problem}")
        resolved[param.name] = value
    if missing:
        raise ParamError(_missing_message(skill, missing))
    if not skill.params:
        resolved.update({k: v for k, v in given.items() if v})
    return resolved


def _missing_message(skill: Skill, missing: Sequence[Param]) -> str:
    described = ", ".join(
        f"'{p.name}' ({_one_line(p.description)})" if p.description else f"'{p.name}'"
        for p in missing
    )
    flags = " ".join(f"--param {p.name}=VALUE" for p in missing)
    if len(missing) == 1:
        return f"skill '{skill.name}' needs param {described}; pass it with {flags}"
    return f"skill '{skill.name}' needs params {described}; pass them with {flags}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _short(value: str) -> str:
    return repr(value) if len(value) <= 40 else repr(value[:37] + "...")
