"""When two protocol responses agree (spec/protocol.md, Agreement between implementations)."""

from __future__ import annotations

from tool_call_closure.conformance.compare import diff_response, diff_responses, error_code, same_value


def test_values_agree_with_key_order_significant() -> None:
    assert same_value({"a": 1, "b": [1, 2.0]}, {"a": 1.0, "b": [1, 2]})
    assert not same_value({"a": 1, "b": 2}, {"b": 2, "a": 1})
    assert not same_value([True], [1])
    assert not same_value(None, 0)
    assert not same_value("1", 1)


def test_error_messages_match_by_their_template() -> None:
    circular = {"id": 1, "error": {"kind": "TypeError", "message": "Converting circular structure to JSON"}}
    v8 = {"id": 1, "error": {"kind": "TypeError", "message": "Converting circular structure to JSON\n    --> x"}}
    assert diff_response(circular, v8) is None  # a prefix template: the engine's tail is ignored
    exact = {"id": 2, "error": {"kind": "TypeError", "message": "calls must be an array"}}
    longer = {"id": 2, "error": {"kind": "TypeError", "message": "calls must be an array!"}}
    assert diff_response(exact, longer) is not None
    assert diff_response(exact, {"id": 2, "error": {"kind": "RangeError", "message": "calls must be an array"}})


def test_protocol_error_messages_are_not_compared_but_kinds_are() -> None:
    ours = {"id": None, "error": {"kind": "ProtocolError", "message": "request is not valid JSON"}}
    theirs = {"id": None, "error": {"kind": "ProtocolError", "message": "Unexpected token"}}
    assert diff_response(ours, theirs) is None
    assert diff_response(ours, {"id": None, "error": {"kind": "TypeError", "message": "x"}}) is not None


def test_nested_lines_and_counts_are_compared() -> None:
    expected = [{"id": 5, "nested": 1, "ok": None}, {"id": 1, "ok": 1}]
    assert diff_responses(expected, [{"id": 5, "nested": 1, "ok": None}, {"id": 1, "ok": 1}]) is None
    assert diff_responses(expected, [{"id": 1, "ok": 1}]) is not None
    assert diff_responses(expected, [{"id": 5, "nested": 2, "ok": None}, {"id": 1, "ok": 1}]) is not None
    assert "expected an error" in (
        diff_response({"id": 1, "error": {"kind": "TypeError", "message": "m"}}, {"id": 1, "ok": 1}) or ""
    )


def test_error_codes_are_recognised_from_messages() -> None:
    assert error_code("TypeError", "calls[3].id must be a non-empty string") == "string_empty"
    assert error_code("RangeError", "callId exceeds its byte limit (512)") == "string_too_long"
    assert error_code("TypeError", "duplicate tool call id: a}b") == "duplicate_call_id"
    assert error_code("TypeError", "Converting circular structure to JSON\n --> x") == "content_circular"
    assert error_code("RangeError", "calls must be an array") is None
