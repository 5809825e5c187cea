"""rein's W1 and LangGraph's, side by side, from one invocation: `make bench-peers`.

Runs rein's W1 bench binary for its figure only (`cargo bench -p rein --bench workloads --
--peer`), then the same workload as a LangGraph StateGraph (langgraph_w1.py, in this
process), and prints both figures in microseconds per decision and their ratio. See
docs/BENCHMARKS.md.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.dont_write_bytecode = True  # no __pycache__ left in the work tree

import langgraph_w1  # noqa: E402  (found through the path set above)


def rein_us_per_decision() -> float:
    cargo = os.environ.get("CARGO", "cargo")
    command = [cargo, "bench", "-q", "-p", "rein", "--bench", "workloads", "--", "--peer"]
    print("$ " + " ".join(command), flush=True)
    out = subprocess.run(command, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    found = re.search(r"^rein_w1_us_per_decision=([0-9.]+)$", out, re.MULTILINE)
    if not found:
        sys.exit(f"no rein_w1_us_per_decision line in the bench output:\n{out}")
    return float(found.group(1))


def main() -> None:
    rein = rein_us_per_decision()
    print(f"$ langgraph_w1.py (langgraph {version('langgraph')}, Python {platform.python_version()})",
          flush=True)
    plain = langgraph_w1.us_per_decision(checkpointer=False, batch=100)
    saved = langgraph_w1.us_per_decision(checkpointer=True, batch=50)
    print()
    print("W1, microseconds per decision (median of 11 repetitions; lower is better)")
    print(f"  rein (policies, resilience stack, hashed ledger)   {rein:10.3f}")
    print(f"  LangGraph StateGraph                               {plain:10.3f}   {plain / rein:7.1f}x rein")
    print(f"  LangGraph StateGraph + InMemorySaver checkpointer  {saved:10.3f}   {saved / rein:7.1f}x rein")


if __name__ == "__main__":
    main()
