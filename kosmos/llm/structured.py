"""Structured requests (docs/protocol.md): context + schema -> a solution that fits the schema.

The schema is applied by the best means the provider has, in this order: native
`response_format` json_schema; else a `generate_response` tool whose parameters are the schema;
else JSON mode with the schema in the system prompt. A server that refuses a capability with
HTTP 400 makes kosmos fall back to the next means for the rest of the run. An answer that does
not validate gets one repair round, with the validation error, before it is an error.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from msgspec.structs import replace
from pydantic import BaseModel, ValidationError

from kosmos.errors import RunFailed
from kosmos.events import CapabilityFallback, Emit, Message, StructuredExchange
from kosmos.llm.content import ContentTypes, ContextMessage, Draft
from kosmos.llm.provider import CapabilityRejected, Provider, Reply, ResponseFormat, ToolSpec
from kosmos.prompts import Prompts

T = TypeVar("T", bound=BaseModel)
Strategy = Literal["json_schema", "tool", "json_mode"]
TOOL_NAME = "generate_response"
_FENCE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n?(.*?)\n?```\s*$", re.DOTALL)


class InvalidSolution(RunFailed):
    """The LLM's answer did not match the schema, even after the repair round."""

    def __init__(self, message: str, *, raw: str = "", problem: str = "") -> None:
        super().__init__(message)
        self.raw = raw
        self.problem = problem


@dataclass(frozen=True)
class Solution(Generic[T]):
    """A validated answer, the strategy that got it, and the raw reply it came from."""

    value: T
    strategy: Strategy
    reply: Reply
    repaired: bool = False


def extract_json(text: str) -> Any:
    """The JSON value in a reply: the whole text, a fenced block, or the outermost {...}."""
    text = text.strip()
    fence = _FENCE.match(text)
    if fence:
        text = fence.group(1).strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        start, end = text.find("{"), text.rfind("}")
        if 0 <= start < end:
            return json.loads(text[start : end + 1])
        raise


def lean_schema(schema: Any) -> Any:
    """A pydantic JSON schema without the `title` pydantic adds to every node: bytes the LLM
    does not need on every request. Properties that are named `title` stay."""
    if isinstance(schema, list):
        return [lean_schema(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in ("properties", "$defs") and isinstance(value, dict):
            out[key] = {name: lean_schema(v) for name, v in value.items()}
        else:
            out[key] = lean_schema(value)
    return out


def is_strict(schema: dict[str, Any]) -> bool:
    """Whether a schema meets OpenAI's strict mode: closed objects with every key required."""

    def ok(node: Any) -> bool:
        if isinstance(node, dict):
            if node.get("type") == "object" and "properties" in node:
                if node.get("additionalProperties") is not False:
                    return False
                if set(node.get("required", [])) != set(node["properties"]):
                    return False
            return all(ok(v) for v in node.values())
        if isinstance(node, list):
            return all(ok(v) for v in node)
        return True

    return ok(schema)


def _problems(error: ValidationError) -> str:
    parts = []
    for e in error.errors()[:5]:
        where = ".".join(str(p) for p in e["loc"]) or "(root)"
        parts.append(f"{where}: {e['msg']}")
    return "; ".join(parts)


class StructuredClient:
    """`request(context, schema) -> solution` over one provider, for one run."""

    def __init__(
        self,
        provider: Provider,
        prompts: Prompts,
        *,
        emit: Emit | None = None,
        types: ContentTypes | None = None,
    ) -> None:
        self.provider = provider
        self.prompts = prompts
        self._emit = emit or (lambda event: None)
        self.types = types or ContentTypes.default()

    def strategy(self) -> Strategy:
        caps = self.provider.capabilities
        if caps.has("json_schema"):
            return "json_schema"
        if caps.has("tools"):
            return "tool"
        return "json_mode"

    def _prepare(
        self, strategy: Strategy, draft: Draft, name: str
    ) -> tuple[list[Message], dict[str, Any]]:
        messages = list(draft.messages)
        schema = draft.schema
        extra = ""
        kwargs: dict[str, Any] = dict(draft.llm)
        if strategy == "json_schema":
            kwargs["response_format"] = ResponseFormat(
                "json_schema", schema, name, strict=is_strict(schema)
            )
        elif strategy == "tool":
            kwargs["tools"] = [
                ToolSpec(
                    name=TOOL_NAME,
                    description=self.prompts["STRUCTURED_TOOL_DESCRIPTION"],
                    parameters=schema,
                )
            ]
            kwargs["tool_choice"] = TOOL_NAME
            extra = self.prompts["STRUCTURED_TOOL_INSTRUCTION"]
        else:
            if self.provider.capabilities.has("json_mode"):
                kwargs["response_format"] = ResponseFormat("json_object")
            extra = self.prompts["STRUCTURED_JSON_INSTRUCTION"].format(
                schema=json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
            )
        if extra:
            if messages and messages[0].role == "system":
                messages[0] = Message(role="system", content=f"{messages[0].content}\n\n{extra}")
            else:
                messages.insert(0, Message(role="system", content=extra))
        return messages, kwargs

    def _solve(
        self, strategy: Strategy, reply: Reply, model: type[T]
    ) -> tuple[T | None, Any, str | None]:
        data: Any = None
        try:
            call = next((c for c in reply.tool_calls if c.name == TOOL_NAME), None)
            if strategy == "tool" and call is not None:
                if "_unparsed" in call.args:
                    return None, None, "the tool arguments were not a JSON object"
                data = call.args
            else:
                data = extract_json(reply.text)
        except (json.JSONDecodeError, ValueError):
            return None, None, "the answer was not JSON"
        try:
            return model.model_validate(data), data, None
        except ValidationError as e:
            return None, data, _problems(e)

    def _repair(self, strategy: Strategy, reply: Reply, error: str) -> list[Message]:
        text = self.prompts["STRUCTURED_REPAIR"].format(error=error)
        call = next((c for c in reply.tool_calls if c.name == TOOL_NAME), None)
        if strategy == "tool" and call is not None:
            call = replace(call, id=call.id or "call_0")
            return [
                Message(role="assistant", content=reply.text, tool_calls=(call,)),
                Message(role="tool", content=text, tool_call_id=call.id, name=TOOL_NAME),
            ]
        return [
            Message(role="assistant", content=reply.text or "(empty answer)"),
            Message(role="user", content=text),
        ]

    async def _call(
        self,
        draft: Draft,
        name: str,
        on_retry: Callable[[int, str, float], None] | None,
    ) -> tuple[Strategy, list[Message], dict[str, Any], Reply]:
        while True:
            strategy = self.strategy()
            messages, kwargs = self._prepare(strategy, draft, name)
            try:
                reply = await self.provider.complete(messages, on_retry=on_retry, **kwargs)
                return strategy, messages, kwargs, reply
            except CapabilityRejected as e:
                caps = self.provider.capabilities
                if not caps.has(e.capability):
                    raise
                caps.reject(e.capability, str(e))
                self._emit(
                    CapabilityFallback(capability=e.capability, reason=str(e), next=self.strategy())
                )

    async def request(
        self,
        context: Sequence[ContextMessage],
        schema: type[T],
        *,
        step: int | None = None,
        on_retry: Callable[[int, str, float], None] | None = None,
    ) -> Solution[T]:
        """Ask the LLM for a `schema` instance; raise InvalidSolution if it cannot give one."""
        draft = self.types.build(context, lean_schema(schema.model_json_schema()))
        name = schema.__name__
        strategy, messages, kwargs, reply = await self._call(draft, name, on_retry)
        value, data, error = self._solve(strategy, reply, schema)
        repaired = False
        if error is not None:
            repaired = True
            fix = messages + self._repair(strategy, reply, error)
            reply = await self.provider.complete(fix, on_retry=on_retry, **kwargs)
            value, data, error = self._solve(strategy, reply, schema)
        self._emit(
            StructuredExchange(
                step=step,
                context=draft.messages,
                schema_=draft.schema,
                name=name,
                llm=draft.llm,
                strategy=strategy,
                solution=data if error is None and isinstance(data, dict) else None,
                repaired=repaired,
                error=error,
            )
        )
        if error is not None or value is None:
            raise InvalidSolution(
                f"the LLM's answer did not match the {name} schema after one repair round "
                f"({error}); try a larger model or another --protocol",
                raw=reply.text,
                problem=error or "no value",
            )
        return Solution(value, strategy, reply, repaired)

    async def replay(self, record: StructuredExchange, schema: type[T]) -> Solution[T]:
        """Send a recorded request again as it was: same context, schema, settings, strategy."""
        draft = Draft(schema=record.schema_, llm=dict(record.llm), messages=list(record.context))
        messages, kwargs = self._prepare(record.strategy, draft, record.name)
        reply = await self.provider.complete(messages, **kwargs)
        value, _, error = self._solve(record.strategy, reply, schema)
        if error is not None or value is None:
            raise InvalidSolution(
                f"the replayed answer did not match the {record.name} schema ({error})",
                raw=reply.text,
                problem=error or "no value",
            )
        return Solution(value, record.strategy, reply)


async def request(
    provider: Provider,
    context: Sequence[ContextMessage],
    schema: type[T],
    *,
    prompts: Prompts,
    emit: Emit | None = None,
    types: ContentTypes | None = None,
) -> Solution[T]:
    """One structured request without keeping a client around."""
    client = StructuredClient(provider, prompts, emit=emit, types=types)
    return await client.request(context, schema)
