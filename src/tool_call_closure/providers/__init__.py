"""Provider APIs: everything specific to one provider lives in that provider's module.

Theory of operation
-------------------
The state machine knows export *formats* only as names in the table
(``operations.export.methods[].format`` in ``spec/machine.json``).  Each module
here is one provider API and holds what is specific to it: the shape of its
tool-result payload (the renderer of its format).  The public class binds each
format the table names to the renderer here (:data:`RENDERERS`), so the machine
never imports a provider and a provider never imports the machine.

========================  ======================  =====================================
module                    table format            payload item
========================  ======================  =====================================
``openai_chat``           ``openai_chat``         ``{"role": "tool", "tool_call_id", "content"}``
``openai_responses``      ``openai_responses``    ``{"type": "function_call_output", "call_id", "output"}``
``anthropic``             ``anthropic``           ``{"type": "tool_result", "tool_use_id", "content", "is_error"?}``
========================  ======================  =====================================

The text every format carries for a call is the same (ADP-5,
:func:`.result_text.result_text`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from tool_call_closure.providers import anthropic, openai_chat, openai_responses
from tool_call_closure.values import Snapshot

__all__ = ["RENDERERS", "anthropic", "openai_chat", "openai_responses"]

RENDERERS: Final[Mapping[str, Callable[[Snapshot], list[dict[str, Any]]]]] = {
    openai_chat.FORMAT: openai_chat.render_tool_results,
    openai_responses.FORMAT: openai_responses.render_tool_results,
    anthropic.FORMAT: anthropic.render_tool_results,
}
"""Table export format -> renderer of a closed snapshot."""
