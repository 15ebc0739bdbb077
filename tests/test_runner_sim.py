"""The runners checked like the machine: the exhaustive simulation holds, and finds every planted bug.

``proofs/runner_sim.py`` enumerates every interleaving of tools, timers and
disturbances for the real runner code on a virtual clock (see its docstring);
here it runs with the bounds CI affords, and against each planted bug of
``proofs/runner_mutants.py``, which it must find.  The Hypothesis state
machine at the end drives the same worlds with drawn choices over larger
batches (up to eight calls).
"""

from __future__ import annotations

import contextlib
import io
import os
import queue
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

ROOT = Path(__file__).resolve().parents[1]
PROOFS = ROOT / "proofs"
sys.path.insert(0, str(PROOFS))

import runner_sim  # noqa: E402
from _runner_worlds import BEHAVIOURS, Chooser  # noqa: E402

LONG = os.environ.get("HYPOTHESIS_PROFILE") == "long"


def _simulate(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = runner_sim.main(list(args))
    return status, out.getvalue()


# (label, arguments): the bounds the test command affords, then the larger ones of the slow command.
FAST = [("one call, one disturbance", ["--calls", "1", "--disturbances", "1"])]
SLOW = [
    ("one call, two disturbances", ["--calls", "1", "--disturbances", "2"]),
    (
        "two calls that return or hang, one disturbance",
        ["--calls", "2", "--disturbances", "1", "--behaviours", "returns,hangs"],
    ),
    (
        "three asyncio calls, one disturbance",
        ["--runner", "asyncio", "--calls", "3", "--disturbances", "1", "--behaviours", "returns,hangs"],
    ),
    (
        "three threaded calls",
        ["--runner", "threads", "--calls", "3", "--disturbances", "0", "--behaviours", "returns,hangs"],
    ),
]
"""The three-call thread runs with a disturbance (675,675 interleavings, about 9 minutes) and two calls of every
behaviour are the long command documented in docs/reliability.md."""


@pytest.mark.parametrize("runner", ["asyncio", "threads"])
@pytest.mark.parametrize(("label", "arguments"), FAST, ids=[label for label, _ in FAST])
def test_every_interleaving_keeps_every_invariant(runner: str, label: str, arguments: list[str]) -> None:
    status, out = _simulate("--runner", runner, *arguments)
    assert status == 0, out
    assert f"{runner}: " in out
    assert "every invariant holds" in out


def test_asyncio_runs_cancellation_after_a_tools_keyboard_interrupt_is_not_the_runners() -> None:
    """A tool cancelled by its timer and still in its cleanup is cancelled again by asyncio.run when another tool
    raises KeyboardInterrupt: asyncio.run's request, not the runner's (found by TestRunnerMachine)."""
    status, out = _simulate(
        "--runner", "asyncio", "--calls", "2", "--disturbances", "0", "--behaviours", "hangs,raises_keyboard_interrupt"
    )
    assert status == 0, out
    assert re.search(r"asyncio: 20 scenarios, \d+ interleavings, every invariant holds", out), out


@pytest.mark.slow
@pytest.mark.parametrize(("label", "arguments"), SLOW, ids=[label for label, _ in SLOW])
def test_every_interleaving_keeps_every_invariant_at_larger_bounds(label: str, arguments: list[str]) -> None:
    status, out = _simulate(*arguments)
    assert status == 0, out
    assert "every invariant holds" in out


# name -> (arguments that reach the bug quickly, what the violation says)
PLANTED: dict[str, tuple[list[str], str]] = {
    "end-not-a-stop": (["--behaviours", "returns,hangs"], "stuck"),
    # the safety net for an exception escaping the delivery gives the call an outcome; the sim still finds the loss
    "conversion-escapes": (["--behaviours", "bad_value"], "reached on_late 0"),
    "str-escapes": (["--behaviours", "broken_str"], "reached on_late 0"),
    # the call still gets an outcome (tool_over's safety net), but what the tool raised never reaches on_late
    "base-exception-escapes": (["--runner", "asyncio", "--behaviours", "raises_generator_exit"], "reached on_late 0"),
    "no-abandon": (["--runner", "threads", "--behaviours", "returns"], "left open"),
    "timer-cancels-twice": (
        ["--runner", "asyncio", "--calls", "2", "--behaviours", "returns,hangs"],
        "cancelled more than once",
    ),
    "ending-as-decided": (["--behaviours", "returns"], "ending:"),
    "slot-kept": (["--runner", "asyncio", "--calls", "2", "--behaviours", "hangs"], "stuck"),
    "executor-failure-ignored": (["--runner", "threads", "--behaviours", "returns"], "stuck"),
    "still-running-from-planned": (
        ["--runner", "threads", "--calls", "2", "--behaviours", "returns"],
        "never started",
    ),
}


def test_every_planted_bug_has_a_case_here() -> None:
    from runner_mutants import MUTANTS

    assert set(PLANTED) == set(MUTANTS)


# Found with two calls (about 5 s quiet): the slow tier runs it, the fast tier the other planted bugs.
SLOW_PLANTED = {"timer-cancels-twice"}


@pytest.mark.parametrize(
    "mutant",
    [pytest.param(mutant, marks=pytest.mark.slow) if mutant in SLOW_PLANTED else mutant for mutant in sorted(PLANTED)],
)
def test_the_simulation_finds_the_planted_bug(mutant: str) -> None:
    arguments, says = PLANTED[mutant]
    if "--calls" not in arguments:
        arguments = [*arguments, "--calls", "1"]
    completed = subprocess.run(
        [sys.executable, str(PROOFS / "runner_sim.py"), "--mutant", mutant, "--disturbances", "1", *arguments],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert completed.returncode == 1, completed.stdout + completed.stderr
    assert "VIOLATION" in completed.stdout
    assert says in completed.stdout, completed.stdout


def test_a_violation_names_the_scenario_and_the_choices_that_replay_it() -> None:
    completed = subprocess.run(
        [
            sys.executable,
            str(PROOFS / "runner_sim.py"),
            "--mutant",
            "ending-as-decided",
            "--runner",
            "asyncio",
            "--calls",
            "1",
            "--behaviours",
            "returns",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    lines = completed.stdout.splitlines()
    assert lines[0] == "VIOLATION in asyncio: tools ['returns'], bounds none, disturbances ['supersede']"
    assert "choices: [" in lines[2]
    assert "'another begin'" in lines[2]


# ------------------------------------------------------------------------------------------ larger batches


class _Handshake(Chooser):
    """A chooser that asks the state machine for each choice (the execution runs on its own thread)."""

    def __init__(self) -> None:
        super().__init__([])
        self.asked: queue.Queue[list[str] | None] = queue.Queue()
        self.answers: queue.Queue[int] = queue.Queue()

    def choose(self, options: list[str]) -> int:
        if self.forced or len(options) == 1:
            return 0
        self.asked.put(options)
        choice = self.answers.get()
        self.labels.append(options[choice])
        return choice


@st.composite
def scenarios(draw: st.DrawFn) -> runner_sim.Scenario:
    """A batch of one to eight calls; always with a deadline, so every drawn scenario must end whatever its tools do."""
    runner = draw(st.sampled_from(["asyncio", "threads"]))
    behaviours = draw(st.lists(st.sampled_from(BEHAVIOURS[runner]), min_size=1, max_size=8))
    disturbances = draw(
        st.lists(st.sampled_from(runner_sim.DISTURBANCES[runner]), max_size=2, unique=True).filter(
            lambda chosen: not {"submit_fails", "future_fails"} <= set(chosen)
        )
    )
    return runner_sim.Scenario(
        runner,
        tuple(behaviours),
        draw(st.booleans()),
        True,
        draw(st.sampled_from([None, 1, 2, 3])),
        tuple(disturbances),
    )


class RunnerMachine(RuleBasedStateMachine):
    """Each step answers one choice of the scheduler; the invariants of runner_sim are checked at the end."""

    def __init__(self) -> None:
        super().__init__()
        self.chooser = _Handshake()
        self.thread: threading.Thread | None = None
        self.verdict: list[str | None] = []
        self.options: list[str] | None = None
        self.worlds: list[object] = []

    @initialize(scenario=scenarios())
    def start(self, scenario: runner_sim.Scenario) -> None:
        self.scenario = scenario

        def execute() -> None:
            try:
                self.verdict.append(
                    runner_sim.run_once(scenario, self.chooser, preemptions=2, on_world=self.worlds.append)
                )
            except BaseException as exc:  # noqa: BLE001  # reported by the machine, not lost in this thread
                self.verdict.append(f"the simulation itself raised {exc!r}")
            finally:
                self.chooser.asked.put(None)

        self.thread = threading.Thread(target=execute, daemon=True)
        self.thread.start()
        self.options = self.chooser.asked.get(timeout=60)

    @precondition(lambda self: self.options is not None)
    @rule(data=st.data())
    def choose(self, data: st.DataObject) -> None:
        assert self.options is not None
        self.chooser.answers.put(data.draw(st.integers(0, len(self.options) - 1), label=str(self.options)))
        self.options = self.chooser.asked.get(timeout=60)

    @rule()
    def look(self) -> None:
        """Between two choices (the execution paused): no call's tool has been invoked twice so far."""
        if self.worlds:
            invoked = self.worlds[0].observed.invocations  # type: ignore[attr-defined]
            assert len(invoked) == len(set(invoked)), invoked

    @invariant()
    def no_verdict_yet_or_a_clean_one(self) -> None:
        if self.verdict:
            assert self.verdict[0] is None, f"{self.scenario.describe()}: {self.verdict[0]}"

    def teardown(self) -> None:
        if self.thread is None:
            return
        self.chooser.forced = True
        while self.options is not None:  # the rest of the execution takes the first option everywhere
            self.chooser.answers.put(0)
            self.options = self.chooser.asked.get(timeout=60)
        self.thread.join(timeout=60)
        assert self.verdict, f"{self.scenario.describe()}: the execution did not end"
        assert self.verdict[0] is None, f"{self.scenario.describe()}: {self.verdict[0]}"


RunnerMachine.TestCase.settings = settings(
    max_examples=1000 if LONG else 60,
    stateful_step_count=120 if LONG else 40,
    deadline=None,
)
TestRunnerMachine = RunnerMachine.TestCase
