"""The offline model: a deterministic, rule-based chat model with tool binding.

It lets the demo and the tests run with no network and no key. Which kind of reply a
call gets depends on the purpose the caller sends with it (`graphwright.nodes.purpose`), never on
the wording of the prompt; an agent turn (purpose `plan`, or none) reads the goal
and constraints from the system prompt and the tool results from the conversation,
and handles a few task shapes: order inquiries, notes search with a budget sum,
scheduling one event, plain arithmetic and reading a range of pages. Anything else
gets an answer that says so. It never follows instructions found in tool output.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.utils.function_calling import convert_to_openai_tool

from graphwright import offline_rules as rules
from graphwright.nodes.handoff import ID_PATTERN, Handoff
from graphwright.nodes.prompt import CONSTRAINTS_HEADER, HANDOFF_HEADER, MEMORY_HEADER
from graphwright.nodes.purpose import purpose_of
from graphwright.nodes.tokens import approximate

PURPOSE_KWARG = "graphwright_purpose"  # how the call's purpose reaches `_reply`
STREAM_CHUNKS = 4  # pieces a streamed reply comes in


@dataclass
class Conversation:
    """What the rules see: the goal, constraints, tools, and every call with its result."""

    goal: str
    constraints: list[str]
    tools: dict[str, dict[str, Any]]
    done: list[rules.Done] = field(default_factory=list)


def _section(system: str, header: str) -> str:
    if header not in system:
        return ""
    return system.split(header, 1)[1].strip().split("\n\n", 1)[0].strip()


def read_conversation(messages: Sequence[BaseMessage], tools: list[dict[str, Any]]) -> Conversation:
    """The current turn: its goal (the newest user message) and the calls made since it."""
    system = next((str(m.content) for m in messages if isinstance(m, SystemMessage)), "")
    humans = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
    start = humans[-1] if humans else 0
    goal = str(messages[start].content) if humans else ""
    constraints = [
        line.removeprefix("- ")
        for line in _section(system, CONSTRAINTS_HEADER).splitlines()
        if line
    ]
    # Remembered preferences count like constraints for the language of the answer.
    constraints += [
        line.removeprefix("- ") for line in _section(system, MEMORY_HEADER).splitlines() if line
    ]
    conv = Conversation(
        goal=goal,
        constraints=constraints,
        tools={t["function"]["name"]: t["function"] for t in tools},
    )
    record = _section(system, HANDOFF_HEADER)
    if record:
        handoff = Handoff.model_validate_json(record)
        # The turn's own user message may have been folded; then the record's newest turn is it.
        turn = (
            messages[start].id
            if humans and messages[start].id
            else (handoff.actions[-1].turn if handoff.actions else "")
        )
        for action in handoff.actions:
            if action.turn == turn:
                conv.done.append(
                    rules.Done.from_result_text(action.tool, action.args, action.result)
                )
        for entry in handoff.earlier:  # folded calls: integer arguments are known exactly
            if entry.turn == turn:
                conv.done += [
                    rules.Done(entry.tool, {key: n}, True, None, None, "")
                    for key, spans in entry.ranges.items()
                    for lo, hi in spans
                    for n in range(lo, hi + 1)
                ]
    turn_messages = messages[start:]
    results = {m.tool_call_id: str(m.content) for m in turn_messages if isinstance(m, ToolMessage)}
    for m in turn_messages:
        if isinstance(m, AIMessage):
            for call in m.tool_calls:
                if call["id"] in results:
                    conv.done.append(
                        rules.Done.from_result_text(call["name"], call["args"], results[call["id"]])
                    )
    return conv


def handoff_reply(messages: Sequence[BaseMessage]) -> str:
    """Summary mode: the ids each folded result shows, as facts citing it; nothing invented."""
    payload = json.loads(str(messages[-1].content))
    facts = []
    for m in payload["folded_messages"]:
        if m["type"] == "tool":
            found = sorted(set(ID_PATTERN.findall(str(m["content"]))))
            if found:
                facts.append({"fact": f"ids seen: {', '.join(found)}", "source": m["tool_call_id"]})
    return json.dumps({"facts": facts, "open_items": []}, ensure_ascii=False)


class OfflineChatModel(BaseChatModel):
    """Deterministic replies from rules; `bind_tools` works as with any chat model."""

    model_name: str = "graphwright-offline"

    @property
    def _llm_type(self) -> str:
        return "graphwright-offline"

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | Any],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    # The purpose is in the run config's metadata; LangChain does not always hand the run
    # manager (which carries it) to `_generate`/`_stream`, so it is passed on as a keyword.
    def invoke(
        self,
        input: LanguageModelInput,
        config: RunnableConfig | None = None,
        *,
        stop: list[str] | None = None,
        **kwargs: Any,
    ) -> AIMessage:
        return super().invoke(input, config, stop=stop, **_purpose_kwarg(config), **kwargs)

    async def ainvoke(
        self,
        input: LanguageModelInput,
        config: RunnableConfig | None = None,
        *,
        stop: list[str] | None = None,
        **kwargs: Any,
    ) -> AIMessage:
        return await super().ainvoke(input, config, stop=stop, **_purpose_kwarg(config), **kwargs)

    def stream(
        self,
        input: LanguageModelInput,
        config: RunnableConfig | None = None,
        *,
        stop: list[str] | None = None,
        **kwargs: Any,
    ) -> Iterator[AIMessageChunk]:
        yield from super().stream(input, config, stop=stop, **_purpose_kwarg(config), **kwargs)

    async def astream(
        self,
        input: LanguageModelInput,
        config: RunnableConfig | None = None,
        *,
        stop: list[str] | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[AIMessageChunk]:
        async for chunk in super().astream(
            input, config, stop=stop, **_purpose_kwarg(config), **kwargs
        ):
            yield chunk

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = self._reply(messages, **kwargs)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        """The same reply in pieces (text in a few chunks, calls and usage in the last)."""
        message = self._reply(messages, **kwargs)
        text = str(message.content)
        size = max(1, -(-len(text) // STREAM_CHUNKS))
        for start in range(0, len(text), size):
            chunk = ChatGenerationChunk(
                message=AIMessageChunk(content=text[start : start + size], id=message.id)
            )
            if run_manager is not None:
                run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk
        calls = [
            tool_call_chunk(
                name=c["name"], args=json.dumps(c["args"], ensure_ascii=False), id=c["id"], index=i
            )
            for i, c in enumerate(message.tool_calls)
        ]
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content="",
                id=message.id,
                tool_call_chunks=calls,
                usage_metadata=message.usage_metadata,
                response_metadata=message.response_metadata,
                chunk_position="last",
            )
        )

    def _reply(self, messages: list[BaseMessage], **kwargs: Any) -> AIMessage:
        side = SIDE_REPLIES.get(kwargs.get(PURPOSE_KWARG) or "plan")
        message = (
            AIMessage(side(messages)) if side else self._turn(messages, kwargs.get("tools") or [])
        )
        prompt = approximate(messages)
        output = approximate([message])
        message.usage_metadata = {
            "input_tokens": prompt,
            "output_tokens": output,
            "total_tokens": prompt + output,
        }
        message.response_metadata = {"model_name": self.model_name}
        message.id = (
            message.id or f"lc_offline_{hashlib.sha256(text_key(messages)).hexdigest()[:16]}"
        )
        return message

    @staticmethod
    def _turn(messages: list[BaseMessage], tools: list[dict[str, Any]]) -> AIMessage:
        """An agent turn (purpose `plan`, or none given): the answer or the next tool calls."""
        conv = read_conversation(messages, tools)
        step = rules.decide(conv.goal, conv.constraints, conv.done, conv.tools)
        if isinstance(step, str):
            return AIMessage(step)
        seed = hashlib.sha256(
            json.dumps([str(m.content) for m in messages], ensure_ascii=False).encode()
        ).hexdigest()
        return AIMessage(
            "",
            tool_calls=[
                {"name": name, "args": args, "id": f"call_{seed[:10]}_{i}", "type": "tool_call"}
                for i, (name, args) in enumerate(step)
            ],
        )


def _purpose_kwarg(config: RunnableConfig | None) -> dict[str, Any]:
    purpose = purpose_of((config or {}).get("metadata"))
    return {PURPOSE_KWARG: purpose} if purpose else {}


def _system(messages: Sequence[BaseMessage]) -> str:
    return next((str(m.content) for m in messages if isinstance(m, SystemMessage)), "")


def _last(messages: Sequence[BaseMessage]) -> str:
    return str(messages[-1].content)


# The replies of the calls that are not agent turns, by the purpose sent with the call.
SIDE_REPLIES: dict[str, Callable[[Sequence[BaseMessage]], str]] = {
    "compact": handoff_reply,
    "split": lambda m: rules.split_reply(_last(m), _system(m)),
    "extract_order": lambda m: rules.extract_reply(_last(m)),
    "phrase": lambda m: rules.phrase_reply(_last(m)),
    "remember": lambda m: rules.remember_reply(_last(m)),
    "synthesize": lambda m: rules.synth_reply(_last(m)),
}


def text_key(messages: Sequence[BaseMessage]) -> bytes:
    """The messages' texts as a cache key, so the same conversation gets the same reply."""
    return json.dumps([str(m.content) for m in messages], ensure_ascii=False).encode()
