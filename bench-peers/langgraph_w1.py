"""W1, the reference run of docs/BENCHMARKS.md, as a LangGraph StateGraph.

Run with: `make bench-peers` (which compares it with rein's figure), or on its own:
`bench-peers/.venv/bin/python bench-peers/langgraph_w1.py`.

The workload is rein's W1: a planner replays 19 decisions -- intake->explore; 8 calls in
explore; explore->decide; decide->act; 6 calls in act; act->validate; finish -- and a tool
node runs a no-op tool for each call. It is written as a LangGraph user would write it:

- the graph state is a TypedDict; evidence is a list with an `operator.add` reducer;
- a `planner` node reads the script at the run's step and returns a state update: a
  pending tool call, a new working state, or the result;
- a `tool` node runs the no-op tool on the pending call and appends the evidence;
- conditional edges route planner -> tool | planner | END, and tool -> planner.

What LangGraph does per run is far less than what rein does: no policy checks (schema,
eligibility, transitions, budgets, approvals), no resilience stack, no hash-chained ledger.
`--checkpointer` adds LangGraph's in-memory checkpointer (`InMemorySaver`), which keeps a
checkpoint of the state after every step -- the nearest LangGraph analogue of rein's
in-memory ledger. The figures are microseconds per decision (time per run / 19), the
median over repetitions, printed as `langgraph_w1_us_per_decision=<x>` (and
`langgraph_w1_checkpointer_us_per_decision=<x>`).
"""

from __future__ import annotations

import operator
import statistics
import sys
import time
from typing import Annotated, Any, Optional, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

DECISIONS = 19
REPS = 11


def script() -> list[tuple[str, Any]]:
    """W1's 19 decisions, as (kind, argument)."""
    steps: list[tuple[str, Any]] = [("transition", "explore")]
    steps += [("call", {"i": i}) for i in range(8)]
    steps += [("transition", "decide"), ("transition", "act")]
    steps += [("call", {"i": i}) for i in range(8, 14)]
    steps += [("transition", "validate"), ("finish", {"status": "ok"})]
    assert len(steps) == DECISIONS
    return steps


SCRIPT = script()


class AgentState(TypedDict):
    goal: str
    state: str
    step: int
    pending: Optional[dict]
    evidence: Annotated[list, operator.add]
    result: Any


def noop(tool_input: dict) -> Any:
    """The no-op tool."""
    return None


def planner(state: AgentState) -> dict:
    kind, argument = SCRIPT[state["step"]]
    update: dict = {"step": state["step"] + 1}
    if kind == "call":
        update["pending"] = argument
    elif kind == "transition":
        update["state"] = argument
    else:  # finish
        update["state"] = "done"
        update["result"] = argument
    return update


def tool(state: AgentState) -> dict:
    tool_input = state["pending"]
    output = noop(tool_input)
    return {
        "pending": None,
        "evidence": [{"tool": "noop", "input": tool_input, "output": output}],
    }


def route(state: AgentState) -> str:
    if state["state"] == "done":
        return END
    if state["pending"] is not None:
        return "tool"
    return "planner"


def build(checkpointer: bool):
    graph = StateGraph(AgentState)
    graph.add_node("planner", planner)
    graph.add_node("tool", tool)
    graph.add_edge(START, "planner")
    graph.add_conditional_edges("planner", route, {"tool": "tool", "planner": "planner", END: END})
    graph.add_edge("tool", "planner")
    return graph.compile(checkpointer=InMemorySaver() if checkpointer else None)


def run(app, n: int) -> dict:
    initial: AgentState = {
        "goal": "Look things up and act on them",
        "state": "intake",
        "step": 0,
        "pending": None,
        "evidence": [],
        "result": None,
    }
    # 19 planner steps and 14 tool steps: more super-steps than the default limit of 25.
    config: dict = {"recursion_limit": 100, "configurable": {"thread_id": f"run-{n}"}}
    return app.invoke(initial, config=config)


def us_per_decision(checkpointer: bool, batch: int) -> float:
    """The median, over REPS batches, of the time per run divided by the 19 decisions."""
    app = build(checkpointer)
    final = run(app, -1)
    assert final["state"] == "done" and len(final["evidence"]) == 14, final
    for n in range(20):  # warm-up
        run(app, n)
    samples = []
    counter = 0
    for _ in range(REPS):
        if checkpointer:
            app = build(True)  # a fresh saver per repetition, like rein's fresh stores
        start = time.perf_counter()
        for _ in range(batch):
            counter += 1
            run(app, counter)
        samples.append((time.perf_counter() - start) / batch / DECISIONS * 1e6)
    return statistics.median(samples)


def main() -> None:
    plain = us_per_decision(checkpointer=False, batch=100)
    print(f"langgraph_w1_us_per_decision={plain:.3f}")
    if "--checkpointer" in sys.argv:
        saved = us_per_decision(checkpointer=True, batch=50)
        print(f"langgraph_w1_checkpointer_us_per_decision={saved:.3f}")


if __name__ == "__main__":
    main()
