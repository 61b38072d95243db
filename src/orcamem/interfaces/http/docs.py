"""``/docs`` (Swagger UI) offline: its script and style come from the package
``fastapi-offline`` (Swagger UI 5, which reads the OpenAPI 3.1 this app publishes), served
under ``/docs/assets/``. FastAPI's own page loads them from a CDN, so on a machine without the
network it was blank. No validator badge (Swagger UI would send the spec to
validator.swagger.io). ``/redoc`` answers with a redirect to ``/docs``: ReDoc's bundle always
loads its logo from the vendor's CDN, and the path stays orcamem's own (never forwarded).
"""

from __future__ import annotations

from importlib.resources import files

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

from .guard import add_public

__all__ = ["ASSETS", "install"]

ASSETS = "/docs/assets"
_OAUTH2_REDIRECT = "/docs/oauth2-redirect"


def install(app: FastAPI) -> None:
    """Serve ``/docs`` and its OAuth2 redirect from the packaged assets, ``/redoc`` as a
    redirect to it (the app is made with ``docs_url=None, redoc_url=None``)."""
    static = files("fastapi_offline") / "static"
    app.mount(ASSETS, StaticFiles(directory=str(static)), name="docs-assets")
    add_public(app, prefixes=[f"{ASSETS}/"])
    title = f"{app.title} API"

    @app.get("/docs", include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=title,
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS}/favicon.png",
            oauth2_redirect_url=_OAUTH2_REDIRECT,
            swagger_ui_parameters={"validatorUrl": None},
        )

    @app.get(_OAUTH2_REDIRECT, include_in_schema=False)
    def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get("/redoc", include_in_schema=False)
    def redoc() -> RedirectResponse:
        return RedirectResponse("/docs")
