"""An agent written with the OpenAI Agents SDK (``pip install
openai-agents``) as probity's black-box agent (docs/agents.md, "Python
tools and agents, and the OpenAI Agents SDK")::

    from agents import Agent, OpenAIChatCompletionsModel, function_tool
    from openai import AsyncOpenAI
    import probity, probity.agents_sdk

    model = OpenAIChatCompletionsModel(model="gpt-4.1-mini", openai_client=AsyncOpenAI())
    shop = Agent(name="shop", instructions="...", model=model, tools=[get_order])
    result = probity.AgentExperiment(
        "shop-sdk", probity.agents_sdk.run_agent(shop), tasks, checks,
    ).run()

:func:`run_agent` runs one episode per call — the task's messages, then
each scripted user turn, through ``Runner.run`` — and hands probity the
transcript (:func:`transcript_messages`: assistant messages, tool calls
with their arguments, tool results), so the agent checks judge the calls
the SDK's agent made with its own tools. Tracing is off unless the
``run_config`` given turns it on.
"""

import json
from typing import Any, Awaitable, Callable, Dict, List, Optional, Sequence

from agents import Agent, ItemHelpers, RunConfig, Runner
from agents.exceptions import MaxTurnsExceeded
from agents.items import MessageOutputItem, RunItem, ToolCallItem, ToolCallOutputItem

from ._agents import Task, Transcript


def _text(output: Any) -> str:
    if isinstance(output, str):
        return output
    try:
        return json.dumps(output)
    except (TypeError, ValueError):
        return str(output)


def transcript_messages(items: Sequence[RunItem]) -> List[Dict[str, Any]]:
    """The SDK run's items as OpenAI chat messages: an assistant message
    per model reply (its text, and its function calls as ``tool_calls``
    with their JSON ``arguments``), a ``tool`` message per function
    result. Items of other kinds (reasoning, handoffs) are left out."""
    out: List[Dict[str, Any]] = []
    # The assistant message tool calls join: the reply just before them.
    open_reply: Optional[Dict[str, Any]] = None
    for item in items:
        if isinstance(item, MessageOutputItem):
            open_reply = {"role": "assistant", "content": ItemHelpers.text_message_output(item)}
            out.append(open_reply)
        elif isinstance(item, ToolCallItem):
            raw = item.raw_item
            call_id = getattr(raw, "call_id", None)
            name = getattr(raw, "name", None)
            if call_id is None or name is None:
                open_reply = None
                continue  # not a function call (a hosted tool of OpenAI's)
            if open_reply is None:
                open_reply = {"role": "assistant", "content": None}
                out.append(open_reply)
            open_reply.setdefault("tool_calls", []).append(
                {
                    "id": str(call_id),
                    "type": "function",
                    "function": {"name": str(name), "arguments": str(getattr(raw, "arguments", "") or "{}")},
                }
            )
        elif isinstance(item, ToolCallOutputItem):
            open_reply = None
            raw = item.raw_item
            call_id = raw.get("call_id") if isinstance(raw, dict) else getattr(raw, "call_id", None)
            out.append({"role": "tool", "tool_call_id": str(call_id), "content": _text(item.output)})
        else:
            open_reply = None
    return out


def _sdk_input(messages: Sequence[Dict[str, Any]]) -> List[Any]:
    """The task's starting messages as the SDK's input items: text
    messages only (a conversation with tool calls cannot be given to
    ``Runner.run`` as chat messages)."""
    items: List[Any] = []
    for k, m in enumerate(messages):
        role, content = m.get("role"), m.get("content")
        if role not in ("system", "developer", "user", "assistant") or not isinstance(content, str) or m.get("tool_calls"):
            raise ValueError(
                f"scenario.messages[{k}]: the Agents SDK adapter starts from text messages "
                f"(system, developer, user, assistant); found role {role!r}"
                + (" with tool calls" if m.get("tool_calls") else "")
            )
        items.append({"role": role, "content": content})
    return items


def run_agent(
    agent: Agent[Any],
    *,
    state: Optional[Callable[[Task], Any]] = None,
    run_config: Optional[Callable[[Task], RunConfig]] = None,
) -> Callable[[Task], Awaitable[Transcript]]:
    """probity's black-box agent (``AgentExperiment(agent=...)``) running
    ``agent`` with the Agents SDK, one episode per call:

    1. the task's ``messages`` (text only), and, unless they end with a
       user message, its first scripted user turn;
    2. ``Runner.run`` with the task's ``max_turns``; then each further
       user turn appended to the conversation and run again, until the
       turns run out or a reply carries the stop signal.

    ``state(task)`` makes the episode's context (the SDK's
    ``RunContextWrapper.context``, which the agent's tools read and
    change): the transcript's ``final_state`` for state checks.
    ``run_config(task)`` gives the run's ``RunConfig`` (default:
    ``RunConfig(tracing_disabled=True)``) — e.g. ``model_settings`` with a
    ``seed`` per repetition. Hitting ``max_turns`` ends the episode at the
    turn limit with what was said so far; any other exception of the SDK
    or the model ends it as an error of the agent's harness.
    """

    async def episode(task: Task) -> Transcript:
        context = state(task) if state is not None else None
        config = run_config(task) if run_config is not None else RunConfig(tracing_disabled=True)
        messages: List[Dict[str, Any]] = [dict(m) for m in task.messages]
        turns = list(task.user_turns)
        if not messages or messages[-1].get("role") != "user":
            if not turns:
                raise ValueError(f"task {task.id!r}: no user message to start from (messages or user_turns)")
            messages.append({"role": "user", "content": turns.pop(0)})
        conversation: List[Any] = _sdk_input(messages)
        stopped = True
        while True:
            try:
                result = await Runner.run(
                    agent, conversation, context=context, max_turns=task.max_turns, run_config=config
                )
            except MaxTurnsExceeded as e:
                if e.run_data is not None:
                    messages += transcript_messages(e.run_data.new_items)
                stopped = False
                break
            messages += transcript_messages(result.new_items)
            if task.stop in _text(result.final_output) or not turns:
                break
            said = turns.pop(0)
            messages.append({"role": "user", "content": said})
            conversation = result.to_input_list() + [{"role": "user", "content": said}]
        return {"messages": messages, "final_state": context, "stopped": stopped}

    episode.__qualname__ = f"run_agent({agent.name})"
    return episode
