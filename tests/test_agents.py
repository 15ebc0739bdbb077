"""Capability agents (issue 24): serve's agent threads, the runner's histories, the table's model, the race
vectors' allowed outcomes, ``check --history`` and ``fuzz --agents`` on the reference.

Real threads make the reference's histories vary from run to run; every assertion here holds for all of them
(no timing assertions).  The planted bugs are tests/test_agents_planted.py.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import time
from pathlib import Path
from typing import Any

import pytest

from test_linearizability import switching_every_microsecond as switching_often
from tool_call_closure.cli.main import main
from tool_call_closure.conformance.agents import allowed_outcomes, allowed_problem, drive, history_of
from tool_call_closure.conformance.agents_model import operation, table_model
from tool_call_closure.conformance.fuzz_agents import FULL, draw_program, fuzz_agents, judge, protocol_executor
from tool_call_closure.conformance.history import HistoryError, read_history, write_history
from tool_call_closure.conformance.linearizability import check
from tool_call_closure.conformance.serve import serve
from tool_call_closure.conformance.subject import InProcessSubject
from tool_call_closure.conformance.vectors import load_vectors

ROOT = Path(__file__).resolve().parents[1]
BEGIN_A = {"id": 2, "cmd": "call", "method": "begin", "args": [[{"id": "a", "name": "t"}]]}


def served(*requests: dict[str, Any]) -> list[dict[str, Any]]:
    out = io.BytesIO()
    serve(io.BytesIO(b"".join(json.dumps(r).encode() + b"\n" for r in requests)), out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


# ---------------------------------------------------------------------------------------------- serve


def test_an_agents_responses_carry_its_agent_and_sequential_ones_wait_for_the_agents() -> None:
    lines = served(
        {"id": 1, "cmd": "new"},
        BEGIN_A,
        {"id": 3, "agent": 0, "cmd": "call", "method": "succeed", "args": [{"$handle": 1}, "a", "x"]},
        {"id": 4, "agent": 5, "cmd": "call", "method": "snapshot"},
        {"id": 5, "cmd": "call", "method": "snapshot"},
    )
    by_id = {line["id"]: line for line in lines}
    assert list(by_id[3]) == ["id", "agent", "ok"]
    assert by_id[3]["agent"] == 0
    assert by_id[4]["agent"] == 5
    assert "agent" not in by_id[5]
    assert [line["id"] for line in lines][-1] == 5  # after both agents' answers
    assert by_id[5]["ok"]["calls"][0]["state"] == "success"


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        ({"id": 3, "agent": -1, "cmd": "call", "method": "snapshot"}, "agent must be an integer from 0 to 63"),
        ({"id": 3, "agent": 64, "cmd": "call", "method": "snapshot"}, "agent must be an integer from 0 to 63"),
        ({"id": 3, "agent": True, "cmd": "call", "method": "snapshot"}, "agent must be an integer from 0 to 63"),
        ({"id": 3, "agent": "x", "cmd": "call", "method": "snapshot"}, "agent must be an integer from 0 to 63"),
        ({"id": 3, "agent": 1, "cmd": "new"}, "only a call request may name an agent"),
        ({"id": 3, "agent": 1, "cmd": "bye"}, "only a call request may name an agent"),
    ],
)
def test_a_malformed_agent_is_a_protocol_error_answered_at_once(request_: dict[str, Any], message: str) -> None:
    lines = served({"id": 1, "cmd": "new"}, request_, {"id": 4, "cmd": "call", "method": "activeGeneration"})
    assert lines[1] == {"id": 3, "error": {"kind": "ProtocolError", "message": message}}
    assert lines[2] == {"id": 4, "ok": None}


def test_a_hook_in_an_agents_request_answers_its_nested_requests_with_the_agent() -> None:
    hook = {"$hook": {"calls": [{"id": 9, "cmd": "call", "method": "activeGeneration"}], "then": "done"}}
    lines = served(
        {"id": 1, "cmd": "new"},
        BEGIN_A,
        {"id": 3, "agent": 2, "cmd": "call", "method": "succeed", "args": [{"$handle": 1}, "a", hook]},
    )
    assert lines[2:] == [
        {"id": 9, "agent": 2, "nested": 1, "ok": 1},
        {
            "id": 3,
            "agent": 2,
            "ok": {
                "accepted": True,
                "generation": 1,
                "callId": "a",
                "settlement": {"status": "success", "content": '"done"', "provenance": "reported"},
            },
        },
    ]


def test_a_subject_without_the_capability_does_not_list_it() -> None:
    subject = InProcessSubject(capabilities=("hook",))
    assert "agents" not in subject.send({"id": 0, "cmd": "hello", "protocol": 1})[0]["capabilities"]
    assert "agents" in InProcessSubject().send({"id": 0, "cmd": "hello", "protocol": 1})[0]["capabilities"]


# ---------------------------------------------------------------------------------------------- histories


def test_reference_histories_are_linearizable() -> None:
    subject = InProcessSubject()
    execute = protocol_executor(subject)
    with switching_often():
        run = fuzz_agents(execute, agents=4, runs=25, repeat=2, seed=11)
    assert run.failures == []
    assert run.unknown == 0
    assert run.histories == 50


@pytest.mark.slow
def test_ten_thousand_reference_histories_raise_no_false_alarm() -> None:
    """The issue's figure: ``tool-call-closure fuzz --agents 4 --runs 2000 --repeat 5`` (10,000 histories)."""
    with switching_often():
        run = fuzz_agents(protocol_executor(InProcessSubject()), agents=4, runs=2000, repeat=5, seed=24)
    assert (run.histories, len(run.failures), run.unknown) == (10_000, 0, 0)


def test_a_driven_history_records_invocations_and_responses_in_order() -> None:
    program = draw_program(__import__("random").Random(3), 3, (2, 3), FULL)
    records = drive(InProcessSubject(), program.requests(), time.perf_counter() + 10)
    assert [r.index for r in records] == list(range(len(records)))
    for record in records:
        assert record.response is not None
        assert record.invoke <= record.response
        assert record.lines[-1]["id"] == record.request["id"]  # type: ignore[index]
        assert (record.lines[-1].get("agent")) == record.agent
    by_agent: dict[Any, list[Any]] = {}
    for record in records:
        by_agent.setdefault(record.agent, []).append(record)
    for mine in by_agent.values():  # an agent's requests never overlap each other
        assert all(a.response <= b.invoke for a, b in itertools.pairwise(mine))  # type: ignore[operator]
    assert judge(history_of(records)).verdict == "linearizable"


# ---------------------------------------------------------------------------------------------- the model


def _op(agent: Any, invoke: float, response: float | None, request: dict[str, Any], ok: Any) -> Any:
    return operation(agent, invoke, response, request, [{"id": request["id"], "ok": ok}])


NEW = {"id": 1, "cmd": "new"}
SUCCEED = {"id": 3, "cmd": "call", "method": "succeed", "args": [{"$handle": 1}, "a", "x"]}
CANCEL = {"id": 4, "cmd": "call", "method": "cancel", "args": [{"$handle": 1}, "a"]}
ACCEPTED = {
    "accepted": True,
    "generation": 1,
    "callId": "a",
    "settlement": {"status": "success", "content": "x", "provenance": "reported"},
}
BEGUN = {"generation": 1, "handle": {"generation": 1}, "superseded": None}


def _dup(observed: str | None) -> dict[str, Any]:
    return {
        "accepted": False,
        "reason": "duplicate_settlement",
        "callId": "a",
        "generation": 1,
        "observedStatus": observed,
    }


def test_the_model_allows_the_normalized_duplicate_only_beside_an_overlapping_winner() -> None:
    setup = [_op("main", 0, 1, NEW, None), _op("main", 2, 3, BEGIN_A, BEGUN)]
    overlapping = [*setup, _op(0, 10, 30, SUCCEED, ACCEPTED), _op(1, 12, 40, CANCEL, _dup("cancelled"))]
    assert check(overlapping, table_model()).verdict == "linearizable"
    after = [*setup, _op(0, 10, 15, SUCCEED, ACCEPTED), _op(1, 20, 40, CANCEL, _dup("cancelled"))]
    assert check(after, table_model()).verdict == "violation"
    plain = [*setup, _op(0, 10, 15, SUCCEED, ACCEPTED), _op(1, 20, 40, CANCEL, _dup(None))]
    assert check(plain, table_model()).verdict == "linearizable"
    wrong_status = [*setup, _op(0, 10, 30, SUCCEED, ACCEPTED), _op(1, 12, 40, CANCEL, _dup("success"))]
    assert check(wrong_status, table_model()).verdict == "violation"


def test_the_model_allows_generation_changed_only_beside_an_overlapping_begin() -> None:
    begin_b = {"id": 3, "cmd": "call", "method": "begin", "args": [[{"id": "b", "name": "t"}]]}
    begun_b = {"generation": 1, "handle": {"generation": 1}, "superseded": None}
    changed = operation(
        1,
        12,
        40,
        BEGIN_A,
        [{"id": 2, "error": {"kind": "TypeError", "message": "active generation changed while validating calls"}}],
    )
    overlapping = [_op("main", 0, 1, NEW, None), _op(0, 10, 30, begin_b, begun_b), changed]
    assert check(overlapping, table_model()).verdict == "linearizable"
    alone = [_op("main", 0, 1, NEW, None), _op(0, 10, 11, begin_b, begun_b), changed]
    assert check(alone, table_model()).verdict == "violation"


def test_two_accepted_settlements_of_one_call_are_a_violation_whatever_the_overlap() -> None:
    cancelled = {
        **ACCEPTED,
        "settlement": {
            "status": "cancelled",
            "code": "cancelled",
            "message": "Tool call was cancelled.",
            "provenance": "reported",
        },
    }
    history = [
        _op("main", 0, 1, NEW, None),
        _op("main", 2, 3, BEGIN_A, BEGUN),
        _op(0, 10, 30, SUCCEED, ACCEPTED),
        _op(1, 11, 29, CANCEL, cancelled),
    ]
    result = check(history, table_model())
    assert result.verdict == "violation"
    assert result.minimal_prefix == 4


# ---------------------------------------------------------------------------------------------- race vectors


def test_the_race_vectors_allowed_outcomes_are_the_tables() -> None:
    vectors = [v for v in load_vectors(ROOT / "spec" / "vectors") if "allowed" in v.data]
    assert {v.id for v in vectors} >= {
        "agents-settle-races-close",
        "agents-two-settles-of-one-call",
        "agents-begin-races-settle-of-old-generation",
        "agents-two-begins-race",
    }
    for vector in vectors:
        outcomes = allowed_outcomes([step["request"] for step in vector.steps])
        allowed = vector.data["allowed"]
        assert [[o[i] for i in allowed["steps"]] for o in outcomes] == allowed["outcomes"]
        assert len(outcomes) >= 2  # a race with one answer needs no allowed set
        assert vector.requires == ["agents"]
        for outcome in outcomes:
            assert allowed_problem(allowed, vector.steps, outcome) is None
        broken = [list(lines) for lines in outcomes[0]]
        broken[allowed["steps"][0]] = [{"id": 3, "agent": 0, "ok": None}]
        problem = allowed_problem(allowed, vector.steps, broken)
        assert problem is not None
        assert "none of the" in problem


def test_two_settles_of_one_call_allow_four_outcomes() -> None:
    (vector,) = [v for v in load_vectors(ROOT / "spec" / "vectors") if v.id == "agents-two-settles-of-one-call"]
    answers = [[lines[0]["ok"] for lines in outcome[:2]] for outcome in vector.data["allowed"]["outcomes"]]
    winners = sorted(sum(a["accepted"] for a in pair) for pair in answers)
    assert winners == [1, 1, 1, 1]  # exactly one accepted in every allowed outcome
    observed = sorted(str(a.get("observedStatus")) for pair in answers for a in pair if not a["accepted"])
    assert observed == ["None", "None", "cancelled", "success"]


# ---------------------------------------------------------------------------------------------- check --history


def _history_file(tmp_path: Path, events: list[dict[str, Any]]) -> Path:
    path = tmp_path / "history.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path


def _recorded(tmp_path: Path) -> list[dict[str, Any]]:
    program = draw_program(__import__("random").Random(8), 3, (2, 3), FULL)
    records = drive(InProcessSubject(), program.requests(), time.perf_counter() + 10)
    out = io.StringIO()
    write_history(records, out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def _check(path: Path, *extra: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["check", "--history", str(path), *extra])
    return status, out.getvalue(), err.getvalue()


def test_check_history_exit_codes(tmp_path: Path) -> None:
    events = _recorded(tmp_path)
    status, out, _ = _check(_history_file(tmp_path, events))
    assert (status, out.splitlines()[-1]) == (0, "linearizable")
    assert _check(_history_file(tmp_path, events), "--budget", "2")[0] == 3
    # a forged answer: the final snapshot claims a call nobody announced
    forged = [dict(e) for e in events]
    last = forged[-1]
    last["response"] = [{"id": last["response"][-1]["id"], "ok": {"generation": 9}}]
    status, out, _ = _check(_history_file(tmp_path, forged))
    assert status == 1
    assert "not linearizable" in out
    assert "shortest violating prefix" in out
    status, _, err = _check(tmp_path / "missing.jsonl")
    assert status == 2
    assert "--history" in err
    assert "Traceback" not in err


def test_a_partial_history_is_resolved_by_search(tmp_path: Path) -> None:
    events = _recorded(tmp_path)
    last = {e["process"]: i for i, e in enumerate(events) if e["type"] == "ok" and e["process"] != "main"}
    agent_answers = sorted(last.values())  # each agent's last answer (a process has one request outstanding)
    partial = [e for i, e in enumerate(events) if i != agent_answers[0]]  # one answer never observed
    assert _check(_history_file(tmp_path, partial))[0] == 0
    lost = [dict(e) for e in events]
    lost[agent_answers[-1]] = {"type": "info", "process": lost[agent_answers[-1]]["process"], "time": 10**18}
    assert _check(_history_file(tmp_path, lost))[0] == 0
    operations = read_history(json.dumps(e) for e in partial)
    assert sum(o.response is None for o in operations) == 1


@pytest.mark.parametrize(
    ("lines", "problem"),
    [
        (["{"], "line 1: not JSON"),
        (["[]"], "line 1: an event must be a JSON object"),
        (['{"type":"begin","process":1,"time":0}'], "line 1: type must be one of invoke, ok, info"),
        (['{"type":"invoke","process":null,"time":0}'], "process must be a string or an integer"),
        (['{"type":"invoke","process":1,"time":"x"}'], "time must be a finite number"),
        (['{"type":"invoke","process":1,"time":0,"request":{"cmd":"bye"}}'], "cmd is new or call"),
        (['{"type":"ok","process":1,"time":0,"response":{"ok":1}}'], "has no request outstanding"),
        (
            [
                '{"type":"invoke","process":1,"time":5,"request":{"id":1,"cmd":"new"}}',
                '{"type":"ok","process":1,"time":1,"response":{"id":1,"ok":null}}',
            ],
            "the response precedes its request",
        ),
        (
            [
                '{"type":"invoke","process":1,"time":5,"request":{"id":1,"cmd":"new"}}',
                '{"type":"invoke","process":1,"time":6,"request":{"id":2,"cmd":"new"}}',
            ],
            "invoked again before its last request ended",
        ),
        ([""], "the history holds no request"),
    ],
)
def test_a_malformed_history_is_a_usage_error_naming_the_line(lines: list[str], problem: str) -> None:
    with pytest.raises(HistoryError, match=problem):
        read_history(lines)


def test_a_history_without_new_starts_from_an_assumed_fresh_instance() -> None:
    lines = [
        '{"type":"invoke","process":"w1","time":1,"request":{"id":1,"cmd":"call","method":"activeGeneration"}}',
        '{"type":"ok","process":"w1","time":2,"response":{"id":1,"ok":null}}',
    ]
    operations = read_history(lines)
    assert len(operations) == 2
    assert check(operations, table_model()).verdict == "linearizable"


# ---------------------------------------------------------------------------------------------- fuzz --agents


def _fuzz(tmp_path: Path, *extra: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["fuzz", "--agents", *extra, "--out", str(tmp_path / "v")])
    return status, out.getvalue(), err.getvalue()


def test_fuzz_agents_on_the_reference_finds_nothing(tmp_path: Path) -> None:
    status, out, _ = _fuzz(tmp_path, "3", "--runs", "10", "--repeat", "2", "--seed", "5")
    assert status == 0
    assert "10 programs, 20 histories" in out
    assert "no history was refuted" in out


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        (("1",), "--agents must be from 2 to 8, not 1"),
        (("9",), "--agents must be from 2 to 8, not 9"),
        (("2", "--runs", "0"), "--runs must be at least 1, not 0"),
        (("2", "--ops", "3,1"), "--ops must be MIN,MAX"),
        (("2", "--budget", "0"), "--budget must be at least 1"),
    ],
)
def test_fuzz_agents_usage_errors(tmp_path: Path, extra: tuple[str, ...], problem: str) -> None:
    status, _, err = _fuzz(tmp_path, *extra)
    assert status == 2
    assert problem in err


def test_the_help_names_the_new_options() -> None:
    for argv, words in ((["fuzz", "--help"], "--agents N"), (["check", "--help"], "--history FILE")):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
            main(argv)
        assert words in out.getvalue()
