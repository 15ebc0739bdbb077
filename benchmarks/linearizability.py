"""The linearizability checker's cost as histories grow (``python benchmarks/linearizability.py``).

Histories are recorded from the reference itself (capability ``agents``, in process, threads switching every
microsecond) for 2, 4 and 8 agents with a growing number of requests per agent (the program of ``fuzz --agents``:
a setup, then every agent's requests at once, then a final snapshot), and each is checked against the table's
model.  Reported per (agents, requests per agent): the histories' mean size, how many operations overlapped
another, the checker's operations per second (operations checked / time spent checking), the model steps per
operation (1.0 is a search that never backtracks), and how many histories were undecided within the budget
(``unknown``: a cost, never a pass).  Figures compare only within one run on one machine.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

from tool_call_closure.conformance.agents import drive, history_of
from tool_call_closure.conformance.agents_model import table_model
from tool_call_closure.conformance.fuzz_agents import FULL, draw_program
from tool_call_closure.conformance.linearizability import check, overlapping
from tool_call_closure.conformance.subject import InProcessSubject


def measure(agents: int, per_agent: int, histories: int, budget: int, seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    subject = InProcessSubject()
    operations = overlaps = steps = unknown = 0
    spent = 0.0
    for _ in range(histories):
        program = draw_program(rng, agents, (per_agent, per_agent), FULL)
        while len(program.agents) < agents:  # exactly `agents` agents
            program = draw_program(rng, agents, (per_agent, per_agent), FULL)
        interval = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)
        try:
            history = history_of(drive(subject, program.requests(), time.perf_counter() + 60))
        finally:
            sys.setswitchinterval(interval)
        started = time.perf_counter()
        result = check(history, table_model(history), budget=budget)
        spent += time.perf_counter() - started
        assert result.verdict != "violation", result.message
        unknown += result.verdict == "unknown"
        operations += len(history)
        overlaps += overlapping(history)
        steps += result.steps
    return {
        "agents": agents,
        "requests_per_agent": per_agent,
        "histories": histories,
        "operations_per_history": operations / histories,
        "overlapping_share": overlaps / operations,
        "operations_per_second": operations / spent,
        "model_steps_per_operation": steps / operations,
        "unknown": unknown,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--histories", type=int, default=40, help="histories per point (default 40)")
    parser.add_argument("--budget", type=int, default=200_000, help="checker budget per history, in model steps")
    parser.add_argument("--out", type=Path, help="also write the figures as JSON to this file")
    args = parser.parse_args()
    rows = []
    print("agents  req/agent  ops/history  overlapping  ops/s checked  steps/op  unknown")
    for agents in (2, 4, 8):
        for per_agent in (1, 2, 4, 8):
            row = measure(agents, per_agent, args.histories, args.budget, seed=agents * 100 + per_agent)
            rows.append(row)
            print(
                f"{agents:6}  {per_agent:9}  {row['operations_per_history']:11.1f}  {row['overlapping_share']:10.0%}"
                f"  {row['operations_per_second']:13,.0f}  {row['model_steps_per_operation']:8.2f}  {row['unknown']:7}"
            )
    if args.out is not None:
        args.out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
