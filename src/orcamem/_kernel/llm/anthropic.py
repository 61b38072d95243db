"""The client for the Anthropic Messages API (``$ANTHROPIC_API_KEY``).

The model is ``$ORCAMEM_ANTHROPIC_MODEL`` or a current Claude model. Claude gets the schema as
the input schema of a single tool it must call, so it can only answer what the schema (or
NOTHING) allows.
"""

from __future__ import annotations

import json
from typing import Any

from ...errors import ModelError, ModelOutputError
from ..env import anthropic_api_key, anthropic_base_url, anthropic_model
from .parse import checked_reply, checked_value, excerpt
from .protocol import NOTHING
from .schema import or_nothing
from .transport import Deadline, PooledClient, check_url, http_error, loads, post

__all__ = ["AnthropicChat"]

_ANSWER_TOOL = "answer"


class AnthropicChat(PooledClient):
    """The Anthropic Messages API (``POST {base_url}/v1/messages``).

    The schema becomes the ``input_schema`` of one tool, ``answer``, which the model is made to
    call (``tool_choice``): its input is ``{"answer": <a value that fits the schema, or
    "NOTHING">}`` (a tool's input must be an object). A reply in plain text instead is parsed
    like any other model's.

    Args:
        api_key: defaults to ``$ANTHROPIC_API_KEY``.
        model: defaults to ``$ORCAMEM_ANTHROPIC_MODEL``, else a current Claude model
            (:data:`orcamem._kernel.env.DEFAULT_ANTHROPIC_MODEL`).
        base_url: defaults to ``$ANTHROPIC_BASE_URL``, else ``https://api.anthropic.com``.
        temperature: sampling temperature.

    Raises:
        ModelError: no API key was given or set.
    """

    VERSION = "2023-06-01"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        model: str | None = None,
        base_url: str | None = None,
        temperature: float = 0.0,
    ) -> None:
        key = api_key or anthropic_api_key()
        if not key:
            raise ModelError(
                "no Anthropic API key: set ANTHROPIC_API_KEY (or pass api_key=), "
                "or use a local model with --upstream URL"
            )
        self._model = model or anthropic_model()
        self._base_url = (base_url or anthropic_base_url()).rstrip("/")
        check_url(self._base_url)
        self._url = self._base_url + "/v1/messages"
        self._temperature = temperature
        super().__init__(
            {
                "x-api-key": key,
                "anthropic-version": self.VERSION,
                "content-type": "application/json",
            }
        )

    @property
    def id(self) -> str:
        return f"anthropic:{self._model}"

    @property
    def model(self) -> str:
        return self._model

    def _complete(
        self, system: str, user: str, schema: dict[str, Any], deadline: Deadline, max_tokens: int
    ) -> Any:
        # A tool's input must be an object: the answer (or NOTHING) is its one property.
        input_schema = {
            "type": "object",
            "properties": {"answer": or_nothing(schema)},
            "required": ["answer"],
        }
        body = {
            "model": self._model,
            "max_tokens": max_tokens,
            "temperature": self._temperature,
            "system": system,
            "messages": [{"role": "user", "content": user}],
            "tools": [
                {
                    "name": _ANSWER_TOOL,
                    "description": (
                        "Give your answer as `answer`: a JSON value that fits the schema, or "
                        f'the string "{NOTHING}" when there is nothing to give.'
                    ),
                    "input_schema": input_schema,
                }
            ],
            "tool_choice": {"type": "tool", "name": _ANSWER_TOOL},
        }
        status, text = post(self._client, self._url, body, deadline, label="Anthropic API")
        if status != 200:
            raise http_error("Anthropic API", self._url, status, text, "ANTHROPIC_API_KEY")
        data = loads("Anthropic API", self._url, text)
        blocks = data.get("content")
        if not isinstance(blocks, list):
            raise ModelOutputError(  # answered, but not a Messages reply
                f"Anthropic API {self._url} sent no 'content' list: {excerpt(text)}: "
                "is the URL the API root (without /v1)?"
            )
        truncated = data.get("stop_reason") == "max_tokens"
        for block in blocks:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                tool_input = block.get("input")
                as_text = json.dumps(tool_input, ensure_ascii=False)
                if not isinstance(tool_input, dict) or "answer" not in tool_input:
                    raise ModelOutputError(
                        f"the model called the answer tool without an 'answer': {excerpt(as_text)}"
                    )
                return checked_value(tool_input["answer"], schema, as_text)
        # No tool call: the model answered in prose (e.g. NOTHING), which is parsed as text.
        reply = "".join(
            block.get("text", "")
            for block in blocks
            if isinstance(block, dict) and block.get("type") == "text"
        )
        return checked_reply(reply, schema, truncated=truncated)

    def __repr__(self) -> str:
        return f"AnthropicChat(model={self._model!r}, base_url={self._base_url!r})"
