"""The shapes of ``CallToolResult`` an MCP server answers with, one tool each in ``tests/mcp_server.py``.

Shared by the server (which returns them), the export checks (``tests/test_mcp_exports.py``, which map each one
offline and render it in every provider export) and the real-server tests; only ``mcp_types`` is imported.
"""

from __future__ import annotations

import base64
from typing import Any

import mcp_types as types

PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
        "0000000d4944415478da63f8cfc0f01f0005000201a3e1b3c40000000049454e44ae426082"
    )
).decode()
WAV = base64.b64encode(b"RIFF\x24\x00\x00\x00WAVEfmt ").decode()
SVG = base64.b64encode(b'<svg xmlns="http://www.w3.org/2000/svg"/>').decode()
CSV = base64.b64encode(b"a,b\n1,2\n").decode()
PDF = base64.b64encode(b"%PDF-1.4\n%tcc\n").decode()


def text(value: str) -> types.TextContent:
    return types.TextContent(type="text", text=value)


def result(*content: Any, structured: Any = None, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=list(content), structured_content=structured, is_error=is_error)


SHAPES: dict[str, types.CallToolResult] = {
    "text": result(text("sunny, 21 °C")),
    "texts": result(text("first block"), text("second block")),
    "empty": result(),
    "image": result(types.ImageContent(type="image", data=PNG, mime_type="image/png")),
    "text_image": result(text("a chart:"), types.ImageContent(type="image", data=PNG, mime_type="image/png")),
    "audio": result(text("a recording:"), types.AudioContent(type="audio", data=WAV, mime_type="audio/wav")),
    "resource_link": result(
        types.ResourceLink(
            type="resource_link", name="report", uri="file:///reports/q3.pdf", mime_type="application/pdf"
        )
    ),
    "embedded_text": result(
        types.EmbeddedResource(
            type="resource",
            resource=types.TextResourceContents(uri="file:///notes.md", mime_type="text/markdown", text="# Notes"),
        )
    ),
    "embedded_pdf": result(
        types.EmbeddedResource(
            type="resource",
            resource=types.BlobResourceContents(uri="file:///q3.pdf", mime_type="application/pdf", blob=PDF),
        )
    ),
    "embedded_image": result(
        types.EmbeddedResource(
            type="resource", resource=types.BlobResourceContents(uri="file:///dot.png", mime_type="image/png", blob=PNG)
        )
    ),
    "image_svg": result(types.ImageContent(type="image", data=SVG, mime_type="image/svg+xml")),
    "embedded_zip": result(
        types.EmbeddedResource(
            type="resource",
            resource=types.BlobResourceContents(uri="file:///a.zip", mime_type="application/zip", blob=PDF),
        )
    ),
    "embedded_csv": result(
        types.EmbeddedResource(
            type="resource",
            resource=types.BlobResourceContents(uri="file:///t.csv", mime_type="text/csv", blob=CSV),
        )
    ),
    "structured": result(text('{"temperature": 21}'), structured={"temperature": 21, "unit": "C"}),
    "structured_only": result(structured={"rows": [1, 2, 3]}),
    "error_text": result(text("Station offline: try again in 5 minutes."), is_error=True),
    "error_structured": result(
        text("Quota exceeded."), structured={"retry_after": 300, "quota": "daily"}, is_error=True
    ),
    "mixed": result(
        text("Everything at once:"),
        types.ImageContent(type="image", data=PNG, mime_type="image/png"),
        types.ResourceLink(type="resource_link", name="data", uri="https://example.com/data.csv", mime_type="text/csv"),
        types.EmbeddedResource(
            type="resource", resource=types.TextResourceContents(uri="file:///a.txt", mime_type="text/plain", text="A")
        ),
        structured={"ok": True},
    ),
}
"""Tool name → the result the server returns for it (each a distinct shape of ``CallToolResult``)."""
