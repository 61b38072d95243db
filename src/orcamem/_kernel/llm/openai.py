"""The client for any OpenAI-compatible ``POST {base_url}/chat/completions`` server.

llama.cpp, Ollama and vLLM serve it; ``orcamem sleep --upstream URL --model M``. Structured
output is sent the way each server accepts it. OpenAI, vLLM and Ollama take
``response_format={"type": "json_schema", ...}``; the llama.cpp servers take
``{"type": "json_object", "schema": ...}`` and turn the schema into a grammar. With
``structured="auto"`` (the default) a client tries the first and, when the server refuses it
(400/422, or any error naming ``response_format``: llama-cpp-python's server answers 500) or
ignores it (the reply does not fit the schema), the second, and keeps using whichever worked.
The schema is also written into the system prompt, for servers that take neither. (OpenAI's own
API wants an object at the root of a strict schema, so it refuses the schema-or-NOTHING one;
it is not a target yet.)
"""

from __future__ import annotations

from typing import Any, Literal

from ...errors import InvalidInputError, ModelError, ModelOutputError
from ..redact import safe_url
from .parse import checked_reply, excerpt
from .protocol import NOTHING
from .schema import or_nothing, schema_prompt
from .transport import Deadline, PooledClient, check_url, http_error, loads, post

__all__ = ["OpenAIChat", "Structured"]

Structured = Literal["auto", "json_schema", "json_object"]


class OpenAIChat(PooledClient):
    """Any OpenAI-compatible ``POST {base_url}/chat/completions`` server.

    Args:
        model: the model name the server knows (``None`` sends none: llama.cpp and vLLM then
            use the model they serve).
        base_url: the API root, e.g. ``http://127.0.0.1:8080/v1`` or ``http://localhost:11434/v1``.
        api_key: sent as ``Authorization: Bearer``; local servers need none.
        structured: how the schema is sent: ``json_schema`` (OpenAI, vLLM, Ollama),
            ``json_object`` (llama.cpp: ``{"type": "json_object", "schema": …}``) or ``auto``
            (try the first, fall back to the second when refused or ignored; the choice is
            kept for the client's life).
        temperature: sampling temperature (0: the most likely answer, repeatable).

    >>> with OpenAIChat("smollm2", "http://127.0.0.1:8012/v1") as model:  # doctest: +SKIP
    ...     model.complete_json("Name one colour.", "", {"type": "string", "maxLength": 20})
    'blue'
    """

    def __init__(
        self,
        model: str | None,
        base_url: str,
        *,
        api_key: str | None = None,
        structured: Structured = "auto",
        temperature: float = 0.0,
    ) -> None:
        if structured not in ("auto", "json_schema", "json_object"):
            raise InvalidInputError(
                f"structured={structured!r}: use 'auto', 'json_schema' or 'json_object'"
            )
        check_url(base_url)
        self._model = model or None
        self._base_url = base_url.rstrip("/")
        self._url = self._base_url + "/chat/completions"
        self._structured: Structured = structured
        self._temperature = temperature
        super().__init__({"Authorization": f"Bearer {api_key}"} if api_key else {})

    @property
    def id(self) -> str:
        return f"openai:{self._model or 'default'}@{safe_url(self._base_url)}"

    @property
    def structured(self) -> Structured:
        """The way schemas are sent now: ``auto`` until a call has shown what the server takes."""
        return self._structured

    def _complete(
        self, system: str, user: str, schema: dict[str, Any], deadline: Deadline, max_tokens: int
    ) -> Any:
        mode = self._structured
        if mode != "auto":
            return self._ask_checked(mode, system, user, schema, max_tokens, deadline)

        status, text, truncated = self._ask(
            "json_schema", system, user, schema, max_tokens, deadline
        )
        if _refused_format(status, text):  # the server does not take json_schema: try json_object
            value = self._ask_checked("json_object", system, user, schema, max_tokens, deadline)
            self._structured = "json_object"
            return value
        if status != 200:
            raise http_error("model server", self._url, status, text, "OPENAI_API_KEY")
        try:
            value = checked_reply(text, schema, truncated=truncated)
        except ModelOutputError:
            if truncated:  # cut short, not ignored: another format would not help
                raise
            # A server that honours json_schema answers within it; this one ignored it.
            value = self._ask_checked("json_object", system, user, schema, max_tokens, deadline)
            self._structured = "json_object"
            return value
        if value is not NOTHING:  # a fitting answer shows the server took the schema
            self._structured = "json_schema"
        return value

    def _ask_checked(
        self,
        mode: Structured,
        system: str,
        user: str,
        schema: dict[str, Any],
        max_tokens: int,
        deadline: Deadline,
    ) -> Any:
        status, text, truncated = self._ask(mode, system, user, schema, max_tokens, deadline)
        if status != 200:
            hint = None
            if "response_format" in text:
                other = "json_schema" if mode == "json_object" else "json_object"
                hint = (
                    f"the server does not take response_format {mode}: "
                    f"use structured='{other}' or 'auto'"
                )
            raise http_error("model server", self._url, status, text, "OPENAI_API_KEY", hint)
        return checked_reply(text, schema, truncated=truncated)

    def _ask(
        self,
        mode: Structured,
        system: str,
        user: str,
        schema: dict[str, Any],
        max_tokens: int,
        deadline: Deadline,
    ) -> tuple[int, str, bool]:
        """One request: ``(status, reply text or error body, cut at max_tokens)``."""
        sent = or_nothing(schema)
        body: dict[str, Any] = {
            "messages": [
                {"role": "system", "content": schema_prompt(system, sent)},
                {"role": "user", "content": user},
            ],
            "max_tokens": max_tokens,
            "temperature": self._temperature,
            "stream": False,
            "response_format": _response_format(mode, sent),
        }
        if self._model:
            body["model"] = self._model
        status, text = post(self._client, self._url, body, deadline, label="model server")
        if status != 200:
            return status, text, False
        data = loads("model server", self._url, text)
        try:
            choice = data["choices"][0]
            content = choice["message"].get("content")
        except (KeyError, IndexError, TypeError, AttributeError):
            raise ModelError(
                f"model server {self._url} sent no OpenAI-style 'choices': {excerpt(text)}: "
                "is the URL the API root (ending in /v1)?"
            ) from None
        return (
            status,
            content if isinstance(content, str) else "",
            choice.get("finish_reason") == "length",
        )

    def __repr__(self) -> str:
        return f"OpenAIChat({self._model!r}, {self._base_url!r}, structured={self._structured!r})"


def _refused_format(status: int, text: str) -> bool:
    """Did the server refuse ``response_format`` itself? 400/422 do; llama-cpp-python's server
    answers its validation error with 500, naming the field."""
    if status in (400, 422):
        return True
    return status >= 400 and ("response_format" in text or "json_schema" in text)


def _response_format(mode: Structured, schema: dict[str, Any]) -> dict[str, Any]:
    if mode == "json_object":
        return {"type": "json_object", "schema": schema}
    return {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": schema, "strict": True},
    }
