"""Chat model clients for the background work: a system and a user message in, one JSON value out.

Models never run on the read path (DESIGN.md, principle 2). Consolidation calls them off the hot
path, under a deadline, and treats what they say as a claim that code verifies. Two clients:

- :class:`OpenAIChat` (``openai``) — any OpenAI-compatible ``POST {base_url}/chat/completions``
  server (llama.cpp, Ollama, vLLM); ``orcamem sleep --upstream URL --model M``.
- :class:`AnthropicChat` (``anthropic``) — the Anthropic Messages API with
  ``$ANTHROPIC_API_KEY``; the model is ``$ORCAMEM_ANTHROPIC_MODEL`` or a current Claude model.

:func:`make_chat_model` picks one from the configuration (or none: many users run without a
model). Every client answers :meth:`ChatModel.complete_json` (``protocol``), with the parsed
JSON that fits the caller's schema (``parse``, ``schema``) or :data:`NOTHING`, the explicit
"nothing worth keeping" answer that :func:`is_nothing` tells apart from an empty result:

>>> model = make_chat_model("http://127.0.0.1:8012/v1", "smollm2")   # doctest: +SKIP
>>> model.complete_json(
...     "Extract the user's stated facts.",
...     "I moved to Pune last week.",
...     bounded({"type": "object", "properties": {"items": {"type": "array",
...              "items": {"type": "string"}}}, "required": ["items"]}),
...     deadline_s=30,
... )                                                                 # doctest: +SKIP
{'items': ['The user moved to Pune.']}

Deadlines are wall-clock totals per call (``transport``). The protocol and NOTHING load at once;
everything else loads on first use, so the job queue (kernel, on the engine's offline path)
can use NOTHING without importing an HTTP client or a schema validator.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..env import anthropic_api_key, openai_api_key
from ..lazy import lazy_names
from .protocol import NOTHING, ChatModel, is_nothing

if TYPE_CHECKING:
    from .anthropic import AnthropicChat
    from .openai import OpenAIChat
    from .parse import parse_json_reply
    from .schema import NOTHING_SCHEMA, bounded, or_nothing, schema_errors, schema_prompt

__all__ = [
    "NOTHING",
    "NOTHING_SCHEMA",
    "OLLAMA_URL",
    "AnthropicChat",
    "ChatModel",
    "OpenAIChat",
    "bounded",
    "is_nothing",
    "make_chat_model",
    "or_nothing",
    "parse_json_reply",
    "schema_errors",
    "schema_prompt",
]

_LAZY = {
    "AnthropicChat": "anthropic",
    "OpenAIChat": "openai",
    "parse_json_reply": "parse",
    "NOTHING_SCHEMA": "schema",
    "bounded": "schema",
    "or_nothing": "schema",
    "schema_errors": "schema",
    "schema_prompt": "schema",
}
"""Names loaded from their module on first use (httpx and jsonschema are slow to import)."""


__getattr__ = lazy_names(__name__, _LAZY)

OLLAMA_URL = "http://localhost:11434/v1"
"""Where a model named without an upstream is asked: a local Ollama's OpenAI-compatible API."""


def make_chat_model(upstream: str | None = None, model: str | None = None) -> ChatModel | None:
    """The chat model the configuration names, or ``None`` when there is none.

    - ``upstream`` (an OpenAI-compatible API root) → :class:`OpenAIChat` with ``model`` and
      ``$OPENAI_API_KEY`` if set;
    - else ``$ANTHROPIC_API_KEY`` set → :class:`AnthropicChat` (``model`` overrides
      ``$ORCAMEM_ANTHROPIC_MODEL``);
    - else ``model`` alone → :class:`OpenAIChat` at :data:`OLLAMA_URL` (``orcamem sleep --model
      llama3.2:3b`` asks a local Ollama);
    - else ``None``: callers fall back to the rule-based consolidator.
    """
    if upstream or (model and not anthropic_api_key()):
        from .openai import OpenAIChat

        return OpenAIChat(model, upstream or OLLAMA_URL, api_key=openai_api_key())
    if anthropic_api_key():
        from .anthropic import AnthropicChat

        return AnthropicChat(model=model)
    return None
