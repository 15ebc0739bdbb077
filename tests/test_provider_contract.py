"""The provider contract (``providers/contract.py``): every registered module has every piece, and a module missing
one is refused naming it — at run time by ``check_provider_module``, and statically by mypy at the registry."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest

from tool_call_closure import ToolCallClosure, UsageError
from tool_call_closure.machine.table import TABLE
from tool_call_closure.providers import PROVIDERS, RENDERERS
from tool_call_closure.providers.contract import check_provider_module

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("module", PROVIDERS, ids=[m.PROVIDER for m in PROVIDERS])
def test_every_registered_provider_module_has_the_whole_contract(module: types.ModuleType) -> None:
    check_provider_module(module)
    stream = module.Stream()
    assert stream.finish().calls == ()  # an empty stream is a turn without calls, and finish() changes nothing
    assert module.ingest([]).calls == ()


def test_the_registry_covers_every_export_format_of_the_table_once() -> None:
    formats = [m.FORMAT for m in PROVIDERS]
    assert len(set(formats)) == len(formats)
    assert set(formats) == {m["format"] for m in TABLE.operations["export"].methods}
    assert set(RENDERERS) == set(formats)
    closure = ToolCallClosure()
    closure.close(closure.begin([{"id": "a", "name": "t"}]).handle)
    for method in ("to_openai_chat_completions", "to_openai_responses", "to_anthropic_tool_results",
                   "to_gemini_function_responses", "to_bedrock_tool_results"):  # fmt: skip
        assert len(getattr(closure, method)()) == 1


PIECES = [
    "PROVIDER",
    "FORMAT",
    "ingest",
    "render_records",
    "render_tool_results",
    "next_request",
    "preflight",
    "Stream",
]


@pytest.mark.parametrize("piece", PIECES)
def test_a_provider_module_missing_a_piece_is_refused_naming_it(piece: str) -> None:
    from tool_call_closure.providers import openai_chat

    fake = types.ModuleType("tool_call_closure.providers.sixth")
    for name in [*PIECES, "__all__"]:
        setattr(fake, name, getattr(openai_chat, name))
    delattr(fake, piece)
    with pytest.raises(UsageError, match=rf"provider module tool_call_closure.providers.sixth .*{piece}"):
        check_provider_module(fake)


def test_a_piece_left_out_of_all_is_refused() -> None:
    from tool_call_closure.providers import openai_chat

    fake = types.ModuleType("sixth")
    for name in PIECES:
        setattr(fake, name, getattr(openai_chat, name))
    fake.__all__ = [name for name in PIECES if name != "preflight"]
    with pytest.raises(UsageError, match="must list preflight in __all__"):
        check_provider_module(fake)


@pytest.mark.slow  # a cold mypy run over the package and the SDK stubs: about a minute
def test_mypy_refuses_a_registered_module_that_lacks_a_piece(tmp_path: Path) -> None:
    """The registry is typed ``tuple[ProviderModule, ...]``: a module without ``preflight`` does not type-check."""
    package = tmp_path / "sixthpkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    source = (ROOT / "src" / "tool_call_closure" / "providers" / "openai_chat.py").read_text(encoding="utf-8")
    (package / "sixth.py").write_text(source.replace("preflight = check_messages\n", ""), encoding="utf-8")
    (package / "registry.py").write_text(
        "from tool_call_closure.providers.contract import ProviderModule\n"
        "from sixthpkg import sixth\n"
        "REGISTRY: tuple[ProviderModule, ...] = (sixth,)\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(package / "registry.py")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    assert done.returncode == 1, done.stdout
    assert 'variable has type "tuple[ProviderModule, ...]"' in done.stdout


def test_a_stream_not_built_on_the_shared_base_is_refused() -> None:
    from tool_call_closure.providers import openai_chat
    from tool_call_closure.providers.streaming import TurnAccumulator

    class Standalone:  # add and finish of its own: the unfinished-turn policy would be written twice
        def add(self, event: object) -> tuple[()]:
            return ()

        def finish(self) -> None:
            return None

    class Incomplete(TurnAccumulator):  # the base, but no calls of its own
        READER = "Incomplete"
        CUT = "no end"

        def add(self, event: object) -> tuple[()]:
            return ()

    for stream, problem in ((Standalone, "must derive from"), (Incomplete, "must define _calls_so_far")):
        fake = types.ModuleType("sixth")
        for name in [*PIECES, "__all__"]:
            setattr(fake, name, getattr(openai_chat, name))
        fake.Stream = stream
        with pytest.raises(UsageError, match=problem):
            check_provider_module(fake)


@pytest.mark.parametrize("module", PROVIDERS, ids=[m.PROVIDER for m in PROVIDERS])
def test_every_stream_answers_an_unfinished_turn_by_the_one_shared_policy(module: types.ModuleType) -> None:
    stream = module.Stream()
    with pytest.raises(UsageError, match=rf"{stream.READER}\.finish: unfinished must be 'answer' or 'run_complete'"):
        stream.finish(unfinished="run_all")
    assert stream.finish(unfinished="run_complete").calls == ()


EXPORT_METHODS = TABLE.operations["export"].methods


@pytest.mark.parametrize("method", EXPORT_METHODS, ids=[m["format"] for m in EXPORT_METHODS])
def test_each_formats_error_mark_is_the_one_the_table_declares(method: dict[str, str]) -> None:
    # The table names how each format marks a call that did not succeed (error_mark); the renderer must write
    # exactly that on every error and cancelled entry and never on a success, and a format without a mark must
    # write success and error entries of the same shape.
    from tool_call_closure.conformance.fuzz_coverage import has_error_mark

    closure = ToolCallClosure()
    batch = closure.begin([{"id": "c1", "name": "ok"}, {"id": "c2", "name": "bad"}, {"id": "c3", "name": "stop"}])
    closure.succeed(batch.handle, "c1", {"a": 1})
    closure.fail(batch.handle, "c2", RuntimeError("boom"))
    closure.close(batch.handle)
    success, error, cancelled = getattr(closure, method["python"])()
    mark = method.get("error_mark")
    if mark is None:
        assert _shape(success) == _shape(error) == _shape(cancelled)
    else:
        assert not has_error_mark(success, mark)
        assert has_error_mark(error, mark)
        assert has_error_mark(cancelled, mark)


def _shape(value: object) -> object:
    return {key: _shape(item) for key, item in value.items()} if isinstance(value, dict) else type(value).__name__


def test_the_error_mark_reader_reads_presence_and_values() -> None:
    from tool_call_closure.conformance.fuzz_coverage import has_error_mark

    assert has_error_mark({"a": {"b": None}}, "a.b")
    assert not has_error_mark({"a": {}}, "a.b")
    assert has_error_mark({"is_error": True}, "is_error=true")
    assert not has_error_mark({"is_error": 1}, "is_error=true")  # JSON true, not a number equal to it
    assert not has_error_mark({"s": "ok"}, 's="error"')
