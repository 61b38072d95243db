"""HTTP interfaces on one FastAPI app: the REST API, the OpenAI-compatible memory proxy and
MCP over streamable HTTP. ``create_app`` composes them."""

from .app import create_app
from .proxy import user_space
from .settings import ServerSettings

__all__ = ["ServerSettings", "create_app", "user_space"]
