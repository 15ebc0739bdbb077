"""``python -m tool_call_closure``: the command-line interface."""

from tool_call_closure.cli.main import main

raise SystemExit(main())
