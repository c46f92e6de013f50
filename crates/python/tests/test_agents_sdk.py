"""Issue 34 item 9(b): an agent written with the official OpenAI Agents
SDK (``openai-agents``), calling real Python function tools, run through
the Python package against probity's simulator served as an
OpenAI-compatible endpoint (``probity sim serve``), its tool calls judged
by the agent checks and its replies by the paper's validators.

The simulator's truth: it calls a tool exactly when the user's message
names it (``auto`` tool choice), filling the first string argument with
the message; its reply to a message with "Thank you" forgets "You're
welcome" with probability 0.15, and overuses contractions with
probability 0.10 — independently per request (the request's ``seed`` is
the episode's repetition, so the run repeats to the digit)."""

import json
import os
import re
import selectors
import subprocess
import time
from typing import Any, Dict, Iterator, List

import pytest
from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, RunConfig, RunContextWrapper, function_tool
from openai import AsyncOpenAI

import probity
import probity.agents_sdk
from conftest import paper_validators, probity_binary
from test_agents import transcript, wilson_contains


@pytest.fixture
def sim_url(tmp_path: Any) -> Iterator[str]:
    """``probity sim serve`` on 127.0.0.1:0, its base URL; stopped after."""
    exe = probity_binary()
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("CI runs this test: build probity (PROBITY_BIN)")
        pytest.skip("no probity binary (cargo build -p probity-cli, or PROBITY_BIN)")
    proc = subprocess.Popen(
        [exe, "sim", "serve", "--listen", "127.0.0.1:0", "--seed", "0"],
        stdout=subprocess.PIPE,
        stderr=open(tmp_path / "sim.stderr", "wb"),
        stdin=subprocess.DEVNULL,
    )
    try:
        assert proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        assert sel.select(timeout=30), (tmp_path / "sim.stderr").read_text()
        line = proc.stdout.readline().decode()
        assert line.startswith("listening on http://"), line
        yield line.strip()[len("listening on ") :]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@function_tool
def get_order(ctx: RunContextWrapper[Dict[str, Any]], order_id: str) -> str:
    """Look an order up.

    Args:
        order_id: the order's id, such as A3.
    """
    found = re.search(r"\bA\d\b", order_id)
    if found is None:
        raise ValueError(f"no order id in {order_id!r}")
    ctx.context["looked_up"].append(found.group(0))
    return f"order {found.group(0)}: placed"


@function_tool
def cancel_order(order_id: str) -> str:
    """Cancel an order."""
    return f"order {order_id} cancelled"


#: Tasks whose message names `get_order` (the simulator calls it), and
#: thanks without naming a tool (it does not).
NAMED = [f"Thank you! Please get_order for order A{k}." for k in range(1, 5)]
UNNAMED = ["Thank you for the quick delivery!", "Thank you, all good now."]


def test_an_agents_sdk_agent_against_the_simulator(sim_url: str) -> None:
    client = AsyncOpenAI(base_url=sim_url, api_key="sk-none", max_retries=0)
    shop = Agent[Dict[str, Any]](
        name="shop",
        instructions="You are the shop's assistant.",
        model=OpenAIChatCompletionsModel(model="sim", openai_client=client),
        tools=[get_order, cancel_order],
    )

    def config(task: probity.Task) -> RunConfig:
        return RunConfig(tracing_disabled=True, model_settings=ModelSettings(extra_args={"seed": task.repetition}))

    agent = probity.agents_sdk.run_agent(shop, state=lambda task: {"looked_up": []}, run_config=config)
    rows = [{"id": f"named-{k}", "text": t} for k, t in enumerate(NAMED)]
    rows += [{"id": f"plain-{k}", "text": t} for k, t in enumerate(UNNAMED)]
    m = 15
    checks: List[Dict[str, Any]] = [
        {"name": "looked_up", "kind": "tool_called", "tool": "get_order", "minimum_success_percentage": 0.5},
        {"name": "never_cancels", "kind": "tool_not_called", "tool": "cancel_order"},
        {"name": "one_call", "kind": "tool_calls", "max": 1},
    ]
    result = probity.AgentExperiment(
        "agents-sdk", agent, rows, checks, validators=paper_validators(), outputs_per_input=m, pass_k=3, concurrency=4
    ).run()
    looked, never, one, contractions, politeness = result.checks
    assert [c.n for c in result.checks] == [len(rows) * m] * 5 and result.errors == 0
    # The tool checks: exact, as the simulator calls a tool by rule.
    assert looked.rate == pytest.approx(len(NAMED) / len(rows)) and never.rate == 1.0 and one.rate == 1.0
    for s in result.samples:
        named = s.input_id.startswith("named")
        assert s.cells[0] == (probity.PASS if named else probity.FAIL)
        t = transcript(s)
        calls: List[Dict[str, Any]] = t["tool_calls"]
        if named:
            # The call with its arguments, the Python tool's result, its
            # write to the episode's context, then the reply.
            (call,) = calls
            assert call["name"] == "get_order" and call["arguments"] == {"order_id": NAMED[int(s.input_id[-1])]}
            order = re.search(r"A\d", call["arguments"]["order_id"])
            assert order is not None and call["result"] == f"order {order.group(0)}: placed"
            assert t["final_state"] == {"looked_up": [order.group(0)]}
            roles = [msg["role"] for msg in t["messages"]]
            assert roles == ["user", "assistant", "tool", "assistant"], roles
        else:
            assert calls == [] and t["final_state"] == {"looked_up": []}
    # The replies' rates: the simulator's known ones within the intervals.
    assert contractions.interval[0] <= 0.90 <= contractions.interval[1], contractions
    # The served simulator reads a tool's result as the last user message,
    # so a reply after a tool call is never to thanks: the politeness
    # check fails there, and passes with 0.85 on the plain tasks only.
    plain = [s for s in result.samples if s.input_id.startswith("plain")]
    assert all(s.cells[4] == probity.FAIL for s in result.samples if s not in plain)
    polite = sum(s.cells[4] == probity.PASS for s in plain)
    assert wilson_contains(polite, len(plain), 0.85), polite
    truth = 0.85 * len(UNNAMED) / len(rows)
    assert politeness.interval[0] <= truth <= politeness.interval[1], politeness
