"""``python -m tool_call_closure``: the command-line interface."""

from ._cli import main

raise SystemExit(main())
