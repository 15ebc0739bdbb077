"""The ``tool-call-closure`` command line: a thin shell over the public API and the conformance kit.

==================  ==========================================================
module              what lives there
==================  ==========================================================
``main``            the argument parser and every subcommand's entry
``outputs``         the output paths a long command writes, checked before it
                    runs
``agents``          ``fuzz --agents`` and ``check --history``: concurrent programs
                    and recorded histories checked for linearizability
``demo``            ``demo``: the guarantees shown on a scripted batch
``bench``           ``bench``: runs the repository's ``benchmarks/bench.py`` (the benchmark
                    against the original on Node and the hand-written baseline,
                    kept out of the wheel) when the checkout is found
``torture``         ``torture``: worker processes race on a durable closure while
                    being SIGKILLed; the history is checked for linearizability
``torture_model``   the torture's operations and its model (the closure in memory)
==================  ==========================================================
"""

from tool_call_closure.cli.main import main

__all__ = ["main"]
