"""Provider APIs: everything specific to one provider lives in that provider's module.

Theory of operation
-------------------
The state machine knows export *formats* only as names in the table
(``operations.export.methods[].format`` in ``spec/machine.json``).  Each module
here is one provider API and holds what is specific to it: the shape of its
tool-result payload (the renderer of its format), the *ingestion* of the
calls the model announced (SDK objects or plain dicts, duck-typed: no SDK is
imported at run time) and its streaming accumulator.  The public class binds each
format the table names to the renderer here (:data:`RENDERERS`), so the machine
never imports a provider and a provider never imports the machine.

========================  ======================  =====================================
module                    table format            payload item
========================  ======================  =====================================
``openai_chat``           ``openai_chat``         ``{"role": "tool", "tool_call_id", "content"}``
``openai_responses``      ``openai_responses``    ``{"type": "function_call_output", "call_id", "output"}``
``anthropic``             ``anthropic``           ``{"type": "tool_result", "tool_use_id", "content", "is_error"?}``
``gemini``                ``gemini``              ``{"function_response": {"id"?, "name", "response"}}``
``bedrock``               ``bedrock``             ``{"toolResult": {"toolUseId", "content": [{"text"}], "status"?}}``
========================  ======================  =====================================

Every provider module has the same public shape, the provider contract
(:mod:`.contract`): ``ingest(value) -> Ingested`` (:mod:`.calls`), a stream
accumulator class ``Stream`` with ``add(chunk_or_event)`` and
``finish(unfinished=…)``, ``render_records`` and ``render_tool_results``, and
its next-request builder and preflight check also as ``next_request`` and
``preflight``; :data:`PROVIDERS` lists the modules.  What they
share is written once: :mod:`.reading` holds the one duck-typing rule (safe
for any value: a reader raises ``UsageError`` or nothing), :mod:`.arguments`
the one rule for a call's arguments (bounded JSON: a value too deep or too
large is that call's ``problem``), and :mod:`.streaming` the end of a turn,
events out of order and the policy for the calls of a turn that never
finished (:data:`UnfinishedPolicy`: by default answered, not run);
:mod:`.sdk_types` names the SDKs' parameter types for type checkers only;
:mod:`.mistral` maps any id to Mistral's 9-character id rule;
:mod:`.parts_render` renders a result made of content parts (deviation D22)
in each provider's native shape, with the documented fallbacks.

Each provider module also assembles the next request around the results
(``next_messages`` / ``next_input`` / ``next_contents``) and checks a whole
message list the way the provider does (``check_messages`` / ``check_input``
/ ``check_contents``), raising :class:`.ProviderRuleError` with the
provider's own error text.

The text every format carries for a call is the same (ADP-5,
:func:`.result_text.result_text`, in ``result_text``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from tool_call_closure.providers import anthropic, bedrock, gemini, mistral, openai_chat, openai_responses
from tool_call_closure.providers.calls import Ingested, ProviderRuleError, SkippedItem, ToolCall
from tool_call_closure.providers.contract import ProviderModule
from tool_call_closure.providers.streaming import UnfinishedPolicy
from tool_call_closure.values import CallRecord

__all__ = [
    "PROVIDERS",
    "RENDERERS",
    "Ingested",
    "ProviderModule",
    "ProviderRuleError",
    "SkippedItem",
    "ToolCall",
    "UnfinishedPolicy",
    "anthropic",
    "bedrock",
    "gemini",
    "mistral",
    "openai_chat",
    "openai_responses",
]

PROVIDERS: Final[tuple[ProviderModule, ...]] = (openai_chat, openai_responses, anthropic, gemini, bedrock)
"""The registry: every provider module, each checked against :class:`.contract.ProviderModule` by mypy here and by
``tests/test_provider_contract.py`` at run time.  A new provider is a module and a line here (see CONTRIBUTING.md)."""

RENDERERS: Final[Mapping[str, Callable[[Sequence[CallRecord], dict[str, Any]], list[dict[str, Any]]]]] = {
    provider.FORMAT: provider.render_records for provider in PROVIDERS
}
"""Table export format -> renderer of a closed snapshot (its call records, and the memo kept for all its exports)."""
