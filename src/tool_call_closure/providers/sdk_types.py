"""The provider SDKs' own parameter types, named for type checkers only.

Theory of operation
-------------------
The exports and next-request helpers return plain dicts and lists.  For a type
checker they are the SDK's own ``TypedDict`` parameter types, so that
``client.chat.completions.create(messages=[..., *exported])`` and its peers
type-check under ``mypy --strict`` without a cast.

The SDKs are never imported at run time (the library has no runtime
dependency): the imports below run only under ``TYPE_CHECKING``.  When an SDK
is not installed, its import fails quietly for the type checker (the
``import-not-found`` ignore) and the name is ``Any``; at run time every name
is bound to ``dict`` (or ``list``), which is what the payloads are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = [
    "AnthropicContentBlockParam",
    "AnthropicMessageParam",
    "AnthropicToolResultBlockParam",
    "BedrockContentBlock",
    "BedrockMessage",
    "ChatCompletionAssistantMessageParam",
    "ChatCompletionMessageParam",
    "ChatCompletionToolMessageParam",
    "GeminiContent",
    "GeminiPart",
    "ResponsesFunctionCallOutput",
    "ResponsesInputItem",
]

if TYPE_CHECKING:
    from anthropic.types import (  # type: ignore[import-not-found,unused-ignore]
        ContentBlockParam as AnthropicContentBlockParam,
    )
    from anthropic.types import (  # type: ignore[import-not-found,unused-ignore]
        MessageParam as AnthropicMessageParam,
    )
    from anthropic.types import (  # type: ignore[import-not-found,unused-ignore]
        ToolResultBlockParam as AnthropicToolResultBlockParam,
    )
    from google.genai.types import (  # type: ignore[import-not-found,unused-ignore]
        ContentDict as GeminiContent,
    )
    from google.genai.types import (  # type: ignore[import-not-found,unused-ignore]
        PartDict as GeminiPart,
    )
    from mypy_boto3_bedrock_runtime.type_defs import (  # type: ignore[import-not-found,unused-ignore]
        ContentBlockTypeDef as BedrockContentBlock,
    )
    from mypy_boto3_bedrock_runtime.type_defs import (  # type: ignore[import-not-found,unused-ignore]
        MessageTypeDef as BedrockMessage,
    )
    from openai.types.chat import (  # type: ignore[import-not-found,unused-ignore]
        ChatCompletionAssistantMessageParam,
        ChatCompletionMessageParam,
        ChatCompletionToolMessageParam,
    )
    from openai.types.responses.response_input_item_param import (  # type: ignore[import-not-found,unused-ignore]
        FunctionCallOutput as ResponsesFunctionCallOutput,
    )
    from openai.types.responses.response_input_param import (  # type: ignore[import-not-found,unused-ignore]
        ResponseInputItemParam as ResponsesInputItem,
    )
else:
    AnthropicContentBlockParam = AnthropicMessageParam = AnthropicToolResultBlockParam = dict
    GeminiContent = GeminiPart = dict
    BedrockContentBlock = BedrockMessage = dict
    ChatCompletionAssistantMessageParam = ChatCompletionMessageParam = ChatCompletionToolMessageParam = dict
    ResponsesFunctionCallOutput = ResponsesInputItem = dict
