"""W6, a long run, as a LangGraph StateGraph: how the time per step grows with the run.

Run with: `make bench-curves` (which also runs rein's W6 and draws both curves), or on its
own: `bench-peers/.venv/bin/python bench-peers/langgraph_w6.py [--calls N]`.

The workload is rein's W6 (crates/cli/benches/curves.rs): a planner proposes a transition
into explore, then N calls of a no-op tool, a transition into decide, and finish; a tool node
runs each call and appends its evidence. It is the graph of langgraph_w1.py with a longer
script, compiled with LangGraph's in-memory checkpointer (`InMemorySaver`), which keeps a
checkpoint after every super-step, the nearest analogue of rein's ledger.

"Time per step" is measured as rein's W6 measures its engine: from the planner's return to
its next entry, so the planner's own work is left out and everything the framework does
between two decisions (the tool node, routing, the reducer, the checkpoint) is counted. At
each checkpoint step k (10, 100, 1,000, 10,000) the figure is the median of the ten gaps
ending at k, and the printed figure is the median of that over the repetitions. Output
lines, one per step, for the plot: `langgraph_w6 step=<k> us=<x>`.
"""

from __future__ import annotations

import argparse
import operator
import statistics
import time
from typing import Annotated, Any, Optional, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

CHECKPOINTS = (10, 100, 1_000, 10_000)


class AgentState(TypedDict):
    goal: str
    state: str
    step: int
    pending: Optional[dict]
    evidence: Annotated[list, operator.add]
    result: Any


def build(calls: int, marks: list[tuple[float, float]]):
    def planner(state: AgentState) -> dict:
        entered = time.perf_counter()
        step = state["step"] + 1
        update: dict = {"step": step}
        if step == 1:
            update["state"] = "explore"
        elif step <= calls + 1:
            update["pending"] = {"i": step}
        elif step == calls + 2:
            update["state"] = "decide"
        else:
            update["state"] = "done"
            update["result"] = {"steps": step}
        marks.append((entered, time.perf_counter()))
        return update

    def tool(state: AgentState) -> dict:
        return {
            "pending": None,
            "evidence": [{"tool": "noop", "input": state["pending"], "output": None}],
        }

    def route(state: AgentState) -> str:
        if state["state"] == "done":
            return END
        if state["pending"] is not None:
            return "tool"
        return "planner"

    graph = StateGraph(AgentState)
    graph.add_node("planner", planner)
    graph.add_node("tool", tool)
    graph.add_edge(START, "planner")
    graph.add_conditional_edges("planner", route, {"tool": "tool", "planner": "planner", END: END})
    graph.add_edge("tool", "planner")
    return graph.compile(checkpointer=InMemorySaver())


def one_run(calls: int) -> tuple[list[float], float]:
    """The gaps between decisions (microseconds) and the whole run's time (seconds)."""
    marks: list[tuple[float, float]] = []
    app = build(calls, marks)
    initial: AgentState = {
        "goal": "a long run",
        "state": "intake",
        "step": 0,
        "pending": None,
        "evidence": [],
        "result": None,
    }
    # Two super-steps per call, and a few around them.
    config: dict = {"recursion_limit": 2 * calls + 20, "configurable": {"thread_id": "w6"}}
    start = time.perf_counter()
    final = app.invoke(initial, config=config)
    whole = time.perf_counter() - start
    assert final["state"] == "done" and len(final["evidence"]) == calls, final["state"]
    gaps = [(b[0] - a[1]) * 1e6 for a, b in zip(marks, marks[1:])]
    return gaps, whole


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    steps = [k for k in CHECKPOINTS if k <= args.calls]
    at: dict[int, list[float]] = {k: [] for k in steps}
    wholes = []
    for _ in range(args.reps):
        gaps, whole = one_run(args.calls)
        wholes.append(whole)
        for k in steps:
            at[k].append(statistics.median(gaps[max(k - 10, 0):min(k, len(gaps))]))
    print(f"W6 in LangGraph: {args.calls} no-op calls in one run, InMemorySaver, "
          f"median of {args.reps} runs")
    first = statistics.median(at[steps[0]])
    for k in steps:
        figure = statistics.median(at[k])
        print(f"langgraph_w6 step={k} us={figure:.3f}  ({figure / first:.2f}x step {steps[0]}'s)")
    print(f"  the whole run: {statistics.median(wholes):.3f} s")


if __name__ == "__main__":
    main()
