"""``tool-call-closure bench --quick``: the benchmark's smoke run (what it measures, not how fast)."""

from __future__ import annotations

import importlib.util
import io
import json
import shutil
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from types import ModuleType

import pytest

from tool_call_closure.cli.bench import BENCHMARKS, load_benchmark
from tool_call_closure.cli.main import main

# The benchmark lives in the repository's benchmarks/ folder, not in the package (the command loads it from there).
bench = load_benchmark()
assert bench is not None, BENCHMARKS
EXPORTS, NODE_WORKLOAD, QUICK = bench.EXPORTS, bench.NODE_WORKLOAD, bench.QUICK
locate_node_original, memory_per_call, run_suite = bench.locate_node_original, bench.memory_per_call, bench.run_suite


@pytest.mark.slow  # runs the benchmark (quick): benchmarks are their own command
def test_the_quick_bench_writes_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    text = io.StringIO()
    with redirect_stdout(text), redirect_stderr(io.StringIO()):
        assert main(["bench", "--quick", "--out", str(out)]) == 0
    results = json.loads(out.read_text(encoding="utf-8"))
    assert set(results["workload"]) == {"10", "100"}
    for entry in results["workload"].values():
        for kind in ("lifecycle", "settle_loop"):
            reference = entry[kind]["reference"]
            assert reference["min"] <= reference["median"] <= reference["max"]
            assert len(reference["samples"]) == QUICK.repeats
            baseline = entry[kind]["baseline"]
            assert len(baseline["samples"]) == QUICK.repeats
            if locate_node_original() is not None:  # the original runs in the same run, and the ratios are given
                assert entry[kind]["ratio"] == reference["median"] / entry[kind]["original"]["median"]
                low, high = entry[kind]["ratio_interval"]
                assert (low, high) == bench.ratio_interval(reference["samples"], entry[kind]["original"]["samples"])
                assert entry[kind]["baseline_ratio"] == baseline["median"] / entry[kind]["original"]["median"]
        for name, phases in entry["phases"].items():  # the profile of a round: every operation, for every subject
            assert set(phases) == {"begin", "succeed", "close", *EXPORTS}, name
            assert all(seconds > 0 for seconds in phases.values()), name
    assert results["settle_cost"]["ratio_1000_to_10"] > 0
    for costs in results["operations"].values():
        assert set(costs) == {"snapshot", "close", *EXPORTS}
    for subject in ("in_process", "subprocess"):
        conformance = results["conformance"][subject]
        assert conformance["not_passed"] == 0  # every vector passes in both, so the steps counted are real steps
        assert conformance["steps"] > 1000
    printed = text.getvalue()
    assert "| N | lifecycle calls/s" in printed
    assert "Where a lifecycle round's time goes" in printed
    assert "conformance runner:" in printed
    assert f"results: {out}" in printed


def test_the_node_workload_ships_with_the_package() -> None:
    script = NODE_WORKLOAD.read_text(encoding="utf-8")
    assert "settle_loop_calls_per_s" in script
    assert "'x'.repeat(64)" in script  # the lifecycle's content, as the shared workload defines it


@pytest.mark.slow  # runs the benchmark (quick): benchmarks are their own command
def test_the_bench_without_node_reports_no_ratio() -> None:
    results = run_suite(QUICK, node=False, sizes=(10,), log=lambda _message: None)
    assert results["machine"]["original"] is None
    assert "ratio" not in results["workload"]["10"]["lifecycle"]


def test_memory_is_measured_per_call() -> None:
    memory = memory_per_call(200)
    # A call record and its index entry take tens of bytes at least; a retained result holds its text.
    assert memory["bytes_per_announced_call"] > 50
    assert memory["bytes_per_retained_result"] > 64


def test_the_baseline_does_the_workloads_work() -> None:
    """The baseline is only a fair measuring stick if it produces what the reference produces for the workload."""
    from tool_call_closure import create_tool_call_closure

    close_reason, calls_of = bench.CLOSE_REASON, bench._calls
    from bench_baseline import LeanClosure  # benchmarks/, on sys.path once the benchmark is loaded

    exports = {}
    for name, closure in (("reference", create_tool_call_closure()), ("baseline", LeanClosure())):
        handle = closure.begin(calls_of(25)).handle
        accepted = [
            closure.succeed(handle, f"call_{i}", {"i": i, "ok": True, "text": "x" * 64}) for i in range(1, 25, 3)
        ]
        refused = closure.succeed(handle, "call_1", "again")  # a duplicate: refused by both
        assert all(result is not None and getattr(result, "accepted", True) for result in accepted)
        assert refused is None or refused.accepted is False
        snapshot = closure.close(handle, close_reason)
        exports[name] = [getattr(closure, method)(snapshot) for method in EXPORTS]  # type: ignore[operator]
    assert exports["baseline"] == exports["reference"]


def test_the_baseline_refuses_what_the_workload_never_sends() -> None:
    from bench_baseline import LeanClosure

    closure = LeanClosure()
    for calls in ([{"id": "", "name": "t"}], [{"id": "a", "name": "t"}, {"id": "a", "name": "u"}], [{"id": 1}]):
        with pytest.raises(ValueError, match=r"non-blank string|duplicate call id"):
            closure.begin(calls)
    handle = closure.begin([{"id": "a", "name": "t"}]).handle
    stale = handle
    handle = closure.begin([{"id": "a", "name": "t"}]).handle
    assert closure.succeed(stale, "a", "x") is None
    assert closure.succeed(handle, "b", "x") is None
    assert closure.succeed(handle, "a", "x") == (2, "a", "success")


def test_the_baselines_limits_are_the_tables_defaults() -> None:
    import bench_baseline

    from tool_call_closure import create_tool_call_closure

    defaults = create_tool_call_closure().limits
    assert defaults.max_id_bytes == bench_baseline._MAX_ID_BYTES
    assert defaults.max_name_bytes == bench_baseline._MAX_NAME_BYTES
    assert defaults.max_code_bytes == bench_baseline._MAX_CODE_BYTES
    assert defaults.max_message_bytes == bench_baseline._MAX_MESSAGE_BYTES
    assert defaults.max_result_bytes == bench_baseline._MAX_RESULT_BYTES


def _never(*_args: object, **_kwargs: object) -> object:
    """Put in place of a measurement a test requires not to start."""
    raise AssertionError("a measurement started")


def test_the_bench_refuses_an_output_it_could_not_write_before_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bench, "run_suite", _never)
    for option, path, problem in (
        ("--out", tmp_path / "missing" / "bench.json", "is not an existing directory"),
        ("--out", tmp_path, "is a directory"),
        ("--plot", tmp_path / "missing" / "plot.png", "is not an existing directory"),
    ):
        err = io.StringIO()
        arguments = ["bench", "--quick", option, str(path)]
        with redirect_stderr(err), redirect_stdout(io.StringIO()):
            assert main(arguments if option == "--out" else [*arguments, "--out", str(tmp_path / "b.json")]) == 2
        assert err.getvalue().startswith(f"tool-call-closure bench: {option} {path}: ")
        assert err.getvalue().rstrip("\n").endswith(problem)


@pytest.mark.slow  # runs the benchmark (quick): benchmarks are their own command
def test_the_bench_prints_its_figures_when_the_results_file_cannot_be_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The path changed during the run (here: the check is skipped): the figures are shown, the status is 1."""
    monkeypatch.setattr(bench, "output_problem", lambda *_args, **_kwargs: None)
    out = tmp_path / "gone" / "bench.json"
    printed, err = io.StringIO(), io.StringIO()
    with redirect_stdout(printed), redirect_stderr(err):
        assert main(["bench", "--quick", "--no-node", "--out", str(out)]) == 1
    assert "| N | lifecycle calls/s" in printed.getvalue()
    assert f"tool-call-closure bench: --out {out}: No such file or directory" in err.getvalue()
    assert not out.exists()


@pytest.mark.skipif(shutil.which("node") is None, reason="the Node workload needs node")
def test_a_broken_original_is_reported_in_one_line_before_anything_is_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bench, "lifecycle_rate", _never)
    for source, error in (
        ('throw new TypeError("broken on load");\n', "TypeError: broken on load"),
        ("module.exports = {};\n", "TypeError: createToolCallClosure is not a function"),
    ):
        original = tmp_path / "index.cjs"
        original.write_text(source, encoding="utf-8")
        monkeypatch.setenv("TCC_JS", str(original))
        err = io.StringIO()
        with redirect_stderr(err), redirect_stdout(io.StringIO()):
            assert main(["bench", "--quick", "--out", str(tmp_path / "b.json")]) == 1
        last = err.getvalue().strip().splitlines()[-1]
        assert last == (
            f"tool-call-closure bench: the original ({original}) failed the workload (exit 1): {error} "
            "(--no-node measures without it)"
        )
        assert "Traceback" not in err.getvalue()
        assert not (tmp_path / "b.json").exists()


def test_the_benchmark_and_its_baseline_are_not_in_the_package() -> None:
    import tool_call_closure

    package = Path(tool_call_closure.__file__).parent
    assert not list(package.rglob("bench_baseline.py"))
    assert not list(package.rglob("bench_workload.cjs"))
    assert (BENCHMARKS / "bench_baseline.py").is_file()
    assert (BENCHMARKS / "bench_workload.cjs").is_file()


def test_without_the_repository_the_bench_command_says_where_the_benchmark_is(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import tool_call_closure.cli.bench as command

    assert command.load_benchmark(tmp_path) is None
    original = command.load_benchmark
    monkeypatch.setattr(command, "load_benchmark", lambda: original(tmp_path))
    errors = io.StringIO()
    with redirect_stderr(errors):
        assert main(["bench", "--quick"]) == 2
    assert "python benchmarks/bench.py" in errors.getvalue()


def test_the_cache_loop_runs_the_settle_loop_on_either_subject_and_refuses_other_arguments() -> None:
    """``benchmarks/cache_loop.py`` (the settle loop alone, for cachegrind's cache and branch simulation)."""
    import importlib.util

    path = Path(BENCHMARKS) / "cache_loop.py"
    spec = importlib.util.spec_from_file_location("cache_loop", path)
    assert spec is not None
    assert spec.loader is not None
    cache_loop = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cache_loop)
    assert cache_loop.main(["reference", "3", "2"]) == 0
    assert cache_loop.main(["baseline", "3", "2"]) == 0
    errors = io.StringIO()
    with redirect_stderr(errors):
        assert cache_loop.main(["original", "3", "2"]) == 2
        assert cache_loop.main(["reference", "-3", "2"]) == 2
        assert cache_loop.main(["reference"]) == 2
    assert errors.getvalue().count("usage: python benchmarks/cache_loop.py") == 3


def test_the_ratio_interval_is_the_bootstrap_of_the_ratio_of_medians() -> None:
    """What the interval means, on samples whose answer is known: no spread gives the ratio itself; a spread gives an
    interval around the ratio of medians that more repetitions of the same spread narrow; the seed fixes it."""
    assert bench.ratio_interval([3.0] * 5, [2.0] * 7) == (1.5, 1.5)
    spread = [0.8, 0.9, 1.0, 1.1, 1.2]
    low, high = bench.ratio_interval([2 * x for x in spread], spread)
    assert low < 2.0 < high
    more_low, more_high = bench.ratio_interval([2 * x for x in spread * 6], spread * 6)
    assert low < more_low < 2.0 < more_high < high
    assert bench.ratio_interval(spread, spread[::-1]) == bench.ratio_interval(spread, spread[::-1])
    assert bench.ratio_interval([1.0, 9.0, 9.0], [1.0, 1.0, 1.0], seed=1) == (1.0, 9.0)


def _interleaved() -> ModuleType:
    """``benchmarks/interleaved.py`` as a module (it imports ``bench.py`` from its own folder)."""
    spec = importlib.util.spec_from_file_location("tcc_interleaved", BENCHMARKS / "interleaved.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_interleaved_slices_rotate_the_subjects_and_leave_out_the_warm_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each round of slices gives every subject one turn, the first place rotating; the warm-up rounds are run and not
    counted; the ratios are of the counted slices (a fake clock: each turn answers its subject's next number)."""
    interleaved = _interleaved()
    order: list[str] = []
    answers = {"reference": iter(range(100, 200)), "baseline": iter(range(300, 400)), "original": iter(range(50, 150))}

    def turn(kind: str, closure: str, calls: object, n: int, seconds: float) -> float:
        assert (kind, n, seconds) == ("settle", 10, 0.5)
        order.append(closure)
        return float(next(answers[closure]))

    class FakeNode:
        def rate(self, kind: str, n: int, seconds: float) -> float:
            order.append("original")
            return float(next(answers["original"]))

    monkeypatch.setattr(interleaved.bench, "timed_rounds", turn)
    monkeypatch.setattr(
        interleaved.bench, "SUBJECTS", {"reference": lambda _n: "reference", "baseline": lambda _n: "baseline"}
    )
    rates = interleaved.measure("settle", 10, 3, 0.5, 1, FakeNode())
    assert order == [
        *("reference", "original", "baseline"),  # the warm-up round
        *("original", "baseline", "reference"),
        *("baseline", "reference", "original"),
        *("reference", "original", "baseline"),
    ]
    assert rates == {"reference": [101, 102, 103], "original": [51, 52, 53], "baseline": [301, 302, 303]}
    figures = interleaved._figures(rates)
    assert figures["reference_ratio"] == 102 / 52
    assert figures["reference_paired_ratio"] == 102 / 52
    assert figures["baseline_ratio_interval"] == bench.ratio_interval(rates["baseline"], rates["original"])


@pytest.mark.slow  # runs the benchmark (tiny slices): benchmarks are their own command
def test_the_interleaved_run_measures_every_subject_and_ends_node(tmp_path: Path) -> None:
    interleaved = _interleaved()
    out = tmp_path / "interleaved.json"
    with redirect_stdout(io.StringIO()) as printed, redirect_stderr(io.StringIO()):
        assert (
            interleaved.main(
                ["--slices", "3", "--slice-seconds", "0.01", "--warmup", "1", "--sizes", "10", "--out", str(out)]
            )
            == 0
        )
    results = json.loads(out.read_text(encoding="utf-8"))
    node = locate_node_original() is not None
    for kind in ("settle", "lifecycle"):
        figures = results["workload"][kind]["10"]
        assert len(figures["reference"]["samples"]) == len(figures["baseline"]["samples"]) == 3
        if node:
            assert figures["reference_ratio"] == figures["reference"]["median"] / figures["original"]["median"]
    assert "| N | settle calls/s (median slice)" in printed.getvalue()
    broken = interleaved.NodeSlices(shutil.which("node") or "node", tmp_path / "no-such-original.cjs")
    with pytest.raises(interleaved.bench.NodeWorkloadError, match=r"did not answer a slice.*Cannot find module"):
        broken.rate("settle", 10, 0.01)


def test_the_interleaved_command_refuses_bad_options_in_one_line() -> None:
    interleaved = _interleaved()
    for argv in (["--sizes", "ten"], ["--slices", "0"], ["--slice-seconds", "0"]):
        with redirect_stderr(io.StringIO()) as errors, pytest.raises(SystemExit) as info:
            interleaved.main(argv)
        assert info.value.code == 2
        assert "Traceback" not in errors.getvalue()
