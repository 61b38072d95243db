"""OpenTelemetry spans around the hot and the background paths (recall, ingest, proxy, sleep).

The spans go through ``opentelemetry-api``: until a tracer provider is installed its tracer is
a no-op (a span costs about a microsecond and nothing leaves the process). :func:`configure`
installs one that exports over OTLP/HTTP only when ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or its
traces-only twin) is set, and only with the ``otel`` extra installed
(``pip install 'orcamem[otel]'``); the servers call it at start.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from opentelemetry import trace

from ..errors import InvalidInputError
from .env import otlp_endpoint, otlp_service

__all__ = ["configure", "flush", "span", "traced"]

F = TypeVar("F", bound=Callable[..., Any])

_tracer = trace.get_tracer("orcamem")
_exporting: list[Any] = []
"""The provider :func:`configure` installed (at most one: OpenTelemetry allows one a process)."""


@contextmanager
def span(name: str, **attributes: Any) -> Iterator[Any]:
    """A span named ``orcamem.<name>`` with ``attributes`` (``None`` values left out); an
    exception that escapes is recorded on it and re-raised."""
    with _tracer.start_as_current_span(
        f"orcamem.{name}",
        attributes={f"orcamem.{k}": v for k, v in attributes.items() if v is not None},
    ) as current:
        yield current


def traced(name: str) -> Callable[[F], F]:
    """Decorate a function (or a coroutine function) so each call runs in ``span(name)``."""

    def decorate(function: F) -> F:
        if inspect.iscoroutinefunction(function):

            @functools.wraps(function)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                with span(name):
                    return await function(*args, **kwargs)

            return run_async  # type: ignore[return-value]

        @functools.wraps(function)
        def run(*args: Any, **kwargs: Any) -> Any:
            with span(name):
                return function(*args, **kwargs)

        return run  # type: ignore[return-value]

    return decorate


def configure() -> str | None:
    """Export spans over OTLP/HTTP when an endpoint is configured; returns it (``None``: not
    configured, nothing installed, spans stay no-ops).

    Raises:
        InvalidInputError: an endpoint is set but the ``otel`` extra is not installed.
    """
    endpoint = otlp_endpoint()
    if endpoint is None:
        return None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        raise InvalidInputError(
            f"an OTLP endpoint is set ({endpoint}) but the exporter is not installed: "
            "pip install 'orcamem[otel]', or unset OTEL_EXPORTER_OTLP_ENDPOINT"
        ) from None
    provider = TracerProvider(resource=Resource.create({"service.name": otlp_service()}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    trace.set_tracer_provider(provider)
    _exporting.append(provider)
    return endpoint


def flush() -> None:
    """Send the spans still batched (a server calls it as it stops; a no-op when not exporting)."""
    for provider in _exporting:
        provider.force_flush()
