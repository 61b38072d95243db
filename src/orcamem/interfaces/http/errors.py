"""One JSON error shape for every HTTP interface: ``{"error": {"type", "message", "status"}}``.

Library errors carry their HTTP status (``OrcamemError.status``); request validation errors
become 422 with the field that was wrong; nothing returns an HTML or empty error body.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ...errors import OrcamemError

__all__ = ["error_body", "install_error_handlers"]


_UNPARSED = "There was an error parsing the body"
"""What FastAPI says of a body it cannot decode (not JSON, not UTF-8)."""


def error_body(kind: str, message: str, status: int) -> dict:
    return {"error": {"type": kind, "message": message, "status": status}}


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(OrcamemError)
    async def orcamem_error(_: Request, exc: OrcamemError) -> JSONResponse:
        return JSONResponse(error_body(type(exc).__name__, str(exc), exc.status), exc.status)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error.get('loc', ()))}: {error.get('msg')}"
            for error in exc.errors()
        )
        return JSONResponse(error_body("InvalidRequest", problems or "invalid request", 422), 422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        message = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        if exc.status_code == 400 and message == _UNPARSED:  # FastAPI's words for any bad body
            message = "the request body cannot be read (not UTF-8?): send one UTF-8 JSON object"
        return JSONResponse(
            error_body("HTTPError", message, exc.status_code), exc.status_code, headers=exc.headers
        )
