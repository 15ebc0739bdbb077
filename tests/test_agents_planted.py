"""fuzz --agents finds every planted concurrency bug and shrinks it; it never accuses the correct subject.

The subject (tests/agents_planted.py) runs its simulated threads under a seeded scheduler: each history is one
interleaving chosen by its seed, so these tests are deterministic (no sleeps, no timing).  The figures of the
issue's closing note come from ``python tests/test_agents_planted.py`` (time to find each bug, its shrunk size).
"""

from __future__ import annotations

import sys
import time

import pytest

from agents_planted import BUGS, planted_executor, run_program
from tool_call_closure.conformance.fuzz_agents import SMALL, FuzzRun, Program, failure_vector, fuzz_agents, judge
from tool_call_closure.conformance.vectors import generate


def _hunt(bug: str, agents: int = 2, runs: int = 200) -> FuzzRun:
    return fuzz_agents(planted_executor([bug]), agents=agents, runs=runs, repeat=10, seed=0, methods=SMALL)


@pytest.mark.parametrize("bug", BUGS)
def test_each_planted_bug_is_found_and_shrunk_to_two_agents_and_three_operations(bug: str) -> None:
    run = _hunt(bug)
    assert run.failures, f"{bug}: not found in {run.histories} histories"
    failure = run.failures[0]
    assert failure.result.verdict == "violation"
    agents, operations = failure.program.size
    assert agents <= 2
    assert operations <= 3
    assert failure.original is not None
    assert failure.original.size[1] >= operations
    # the shrunk program still fails for some schedule, and the failure names what could not be placed
    assert failure.result.stuck
    assert failure.result.minimal_prefix is not None


@pytest.mark.slow
@pytest.mark.parametrize("bug", BUGS)
def test_each_planted_bug_is_found_among_four_agents_too(bug: str) -> None:
    run = _hunt(bug, agents=4, runs=500)
    assert run.failures
    assert run.failures[0].program.size[0] <= 2


def test_the_correct_subject_is_never_accused() -> None:
    run = fuzz_agents(planted_executor(), agents=3, runs=60, repeat=4, seed=1, methods=SMALL)
    assert run.failures == []
    assert run.unknown == 0
    assert run.histories == 240


@pytest.mark.slow
def test_the_correct_subject_is_never_accused_over_two_thousand_schedules() -> None:
    run = fuzz_agents(planted_executor(), agents=4, runs=400, repeat=5, seed=2, methods=SMALL)
    assert (run.histories, len(run.failures), run.unknown) == (2_000, 0, 0)


def test_a_schedule_is_a_seed_the_same_seed_gives_the_same_history() -> None:
    program = Program(
        (
            ({"cmd": "call", "method": "succeed", "args": [{"$handle": 2}, "a", "x"]},),
            ({"cmd": "call", "method": "close", "args": [{"$handle": 2}]},),
        )
    )
    histories = {repr(run_program(program, seed, ["commit-unlocked"])) for seed in range(50)}
    assert repr(run_program(program, 7, ["commit-unlocked"])) == repr(run_program(program, 7, ["commit-unlocked"]))
    assert len(histories) > 1  # different seeds, different interleavings


def test_two_settles_racing_with_the_commit_unlocked_are_both_accepted_in_some_schedule() -> None:
    program = Program(
        (
            ({"cmd": "call", "method": "succeed", "args": [{"$handle": 2}, "a", "x"]},),
            ({"cmd": "call", "method": "cancel", "args": [{"$handle": 2}, "a"]},),
        )
    )
    verdicts = {judge(run_program(program, seed, ["commit-unlocked"])).verdict for seed in range(40)}
    assert verdicts == {"linearizable", "violation"}
    assert {judge(run_program(program, seed)).verdict for seed in range(40)} == {"linearizable"}


def test_a_shrunk_failure_becomes_a_vector_of_the_references_allowed_outcomes() -> None:
    failure = _hunt("close-not-idempotent").failures[0]
    vector = generate(failure_vector(failure, "agents-fuzz-planted"))
    assert vector["origin"] == "fuzz"
    assert vector["requires"] == ["agents"]
    assert vector["allowed"]["outcomes"]
    assert [step["request"] for step in vector["steps"]] == failure.program.requests()


def main() -> None:
    """Print the figures: time to find each bug, the shrunk size, and the false alarms over 10,000 schedules."""
    for bug in BUGS:
        started = time.perf_counter()
        run = _hunt(bug, agents=3, runs=500)
        failure = run.failures[0]
        assert failure.original is not None
        print(
            f"{bug:26} found after {failure.found_after:.3f} s ({run.histories} histories), "
            f"shrunk from {failure.original.describe()} to {failure.program.describe()} "
            f"(total {time.perf_counter() - started:.2f} s)"
        )
    started = time.perf_counter()
    run = fuzz_agents(planted_executor(), agents=4, runs=2000, repeat=5, seed=2, methods=SMALL)
    print(
        f"correct subject: {run.histories} histories, {run.operations} operations, {len(run.failures)} violations, "
        f"{run.unknown} unknown, {time.perf_counter() - started:.1f} s"
    )


if __name__ == "__main__" and sys.argv[1:] == []:
    main()
