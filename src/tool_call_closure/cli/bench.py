"""``tool-call-closure bench``: run the repository's benchmark (``benchmarks/bench.py``) when it is found.

Theory of operation
-------------------
The benchmark harness, its hand-written baseline closure and the original's
Node workload live in the repository's ``benchmarks/`` folder, not in the
wheel: they are tools for measuring the library, not part of it.  This
command finds that folder beside the package's source tree (a checkout or an
editable install), loads ``bench.py`` from it and runs it with the same
options; from an installed wheel it says where the benchmark is instead.
The one documented command is ``python benchmarks/bench.py`` from a checkout.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Final

__all__ = ["BENCHMARKS", "bench_arguments", "load_benchmark", "run_bench"]

BENCHMARKS: Final = Path(__file__).resolve().parents[3] / "benchmarks"
"""The repository's ``benchmarks/`` folder, when the package runs from a source tree."""

_NAME: Final = "tool_call_closure_benchmark"  # the module name the script is loaded under


def bench_arguments(parser: argparse.ArgumentParser) -> None:
    """The benchmark's options (the same as ``benchmarks/bench.py``'s)."""
    parser.add_argument("--quick", action="store_true", help="a fast smoke run (tiny budgets; figures not meaningful)")
    parser.add_argument("--out", type=Path, default=Path("bench.json"), help="JSON results (default bench.json)")
    parser.add_argument("--plot", type=Path, default=None, help="write a PNG plot of calls/s against N (matplotlib)")
    parser.add_argument("--repeats", type=int, default=None, help="alternating repetitions per figure (default 5)")
    parser.add_argument("--no-node", action="store_true", help="do not run the original even when it is found")


def load_benchmark(folder: Path = BENCHMARKS) -> ModuleType | None:
    """``benchmarks/bench.py`` as a module, or ``None`` when there is no such file (an installed wheel)."""
    script = folder / "bench.py"
    if not script.is_file():
        return None
    loaded = sys.modules.get(_NAME)
    if loaded is not None and getattr(loaded, "__file__", None) == str(script):
        return loaded  # loaded once: what a test patches in it is what the command runs
    spec = importlib.util.spec_from_file_location(_NAME, script)
    if spec is None or spec.loader is None:  # pragma: no cover - a .py file always has a loader
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def run_bench(args: argparse.Namespace) -> int:
    benchmark = load_benchmark()
    if benchmark is None:
        print(
            "tool-call-closure bench: the benchmark is not installed with the package; from a checkout of the "
            f"repository run: python benchmarks/bench.py (looked for {BENCHMARKS / 'bench.py'})",
            file=sys.stderr,
        )
        return 2
    status: int = benchmark.run_bench(args)
    return status
