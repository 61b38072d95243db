"""The dashboard at ``/ui``: see, search, correct and delete what memory holds, and why a
block was injected. One static page (vanilla JS and CSS in ``static/``, no build step, no CDN,
no network font) built only on the public REST API: the page and its files are public, every
read and write goes through ``/api`` with the key typed into the page, so a key sees exactly
the spaces it may use. A Content-Security-Policy keeps the page to its own origin, and the
script writes stored text with ``textContent`` only: what memory holds is never markup.
"""

from __future__ import annotations

from importlib.resources import files

from fastapi import FastAPI
from fastapi.responses import FileResponse, JSONResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

from ..errors import error_body
from ..guard import add_public

__all__ = ["ASSETS", "PAGE", "install"]

PAGE = "/ui"
ASSETS = "/ui/assets"
STATIC = files(__name__) / "static"
_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"
)
_HEADERS = {"content-security-policy": _POLICY, "cache-control": "no-store"}


def install(app: FastAPI) -> None:
    """Serve the page at ``/ui`` (``/ui/`` redirects there) and its files under
    ``/ui/assets/``; any other ``/ui/…`` path is orcamem's 404, never forwarded to an
    upstream's UI."""
    app.mount(ASSETS, StaticFiles(directory=str(STATIC)), name="dashboard-assets")
    add_public(app, paths=[PAGE, f"{PAGE}/"], prefixes=[f"{ASSETS}/"])

    @app.get(PAGE, include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(str(STATIC / "index.html"), headers=_HEADERS)

    @app.get(f"{PAGE}/", include_in_schema=False)
    def slash() -> RedirectResponse:
        return RedirectResponse(PAGE)

    @app.api_route(f"{PAGE}/{{rest:path}}", methods=["GET", "HEAD"], include_in_schema=False)
    def elsewhere(rest: str) -> JSONResponse:
        message = f"no dashboard page /ui/{rest}: open /ui (pages are #/spaces, #/why, …)"
        return JSONResponse(error_body("NotFound", message, 404), 404)
