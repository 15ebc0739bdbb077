"""The ``tool-call-closure`` command line: a thin shell over the public API and the conformance kit."""

from tool_call_closure.cli.main import main

__all__ = ["main"]
