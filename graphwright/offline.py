"""The offline model: a deterministic, rule-based chat model with tool binding.

It lets the demo and the tests run with no network and no key. It reads the goal
and constraints from the system prompt and the tool results from the conversation,
and handles a few task shapes: order inquiries, notes search with a budget sum,
scheduling one event, plain arithmetic and reading a range of pages. Anything else
gets an answer that says so. It never follows instructions found in tool output.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
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
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool

from graphwright import offline_rules as rules
from nodes.handoff import ID_PATTERN, Handoff
from nodes.prompt import CONSTRAINTS_HEADER, HANDOFF_HEADER, MEMORY_HEADER
from nodes.tokens import approximate

HANDOFF_MARKER = "Write the handoff record"
SPLIT_MARKER = "Split the task"
SYNTH_MARKER = "Write the final answer to the user's task"
EXTRACT_MARKER = "Extract the order id"
REMEMBER_MARKER = "Extract what the user explicitly asked"
PHRASE_MARKER = "Phrase the answer"
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
        line.removeprefix("- ") for line in _section(system, CONSTRAINTS_HEADER).splitlines() if line
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
        turn = messages[start].id if humans and messages[start].id else (
            handoff.actions[-1].turn if handoff.actions else "")
        for action in handoff.actions:
            if action.turn == turn:
                conv.done.append(rules.Done.from_result_text(action.tool, action.args, action.result))
        for entry in handoff.earlier:  # folded calls: integer arguments are known exactly
            if entry.turn == turn:
                conv.done += [rules.Done(entry.tool, {key: n}, True, None, None, "")
                              for key, spans in entry.ranges.items()
                              for lo, hi in spans for n in range(lo, hi + 1)]
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
    """Deterministic replies from rules; ``bind_tools`` works as with any chat model."""

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

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages, **kwargs))])

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
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=text[start:start + size], id=message.id))
            if run_manager is not None:
                run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk
        calls = [tool_call_chunk(name=c["name"], args=json.dumps(c["args"], ensure_ascii=False),
                                 id=c["id"], index=i) for i, c in enumerate(message.tool_calls)]
        yield ChatGenerationChunk(message=AIMessageChunk(
            content="", id=message.id, tool_call_chunks=calls, usage_metadata=message.usage_metadata,
            response_metadata=message.response_metadata, chunk_position="last"))

    def _reply(self, messages: list[BaseMessage], **kwargs: Any) -> AIMessage:
        system = next((str(m.content) for m in messages if isinstance(m, SystemMessage)), "")
        if system.startswith(HANDOFF_MARKER):
            message = AIMessage(handoff_reply(messages))
        elif system.startswith(SPLIT_MARKER):
            message = AIMessage(rules.split_reply(str(messages[-1].content), system))
        elif system.startswith(EXTRACT_MARKER):
            message = AIMessage(rules.extract_reply(str(messages[-1].content)))
        elif system.startswith(PHRASE_MARKER):
            message = AIMessage(rules.phrase_reply(str(messages[-1].content)))
        elif system.startswith(REMEMBER_MARKER):
            message = AIMessage(rules.remember_reply(str(messages[-1].content)))
        elif system.startswith(SYNTH_MARKER):
            message = AIMessage(rules.synth_reply(str(messages[-1].content)))
        else:
            conv = read_conversation(messages, kwargs.get("tools") or [])
            step = rules.decide(conv.goal, conv.constraints, conv.done, conv.tools)
            if isinstance(step, str):
                message = AIMessage(step)
            else:
                seed = hashlib.sha256(
                    json.dumps([str(m.content) for m in messages], ensure_ascii=False).encode()
                ).hexdigest()
                message = AIMessage(
                    "",
                    tool_calls=[
                        {"name": name, "args": args, "id": f"call_{seed[:10]}_{i}", "type": "tool_call"}
                        for i, (name, args) in enumerate(step)
                    ],
                )
        prompt = approximate(messages)
        output = approximate([message])
        message.usage_metadata = {
            "input_tokens": prompt, "output_tokens": output, "total_tokens": prompt + output
        }
        message.response_metadata = {"model_name": self.model_name}
        message.id = message.id or f"lc_offline_{hashlib.sha256(text_key(messages)).hexdigest()[:16]}"
        return message


def text_key(messages: Sequence[BaseMessage]) -> bytes:
    return json.dumps([str(m.content) for m in messages], ensure_ascii=False).encode()
