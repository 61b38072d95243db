"""``GET /api/capability`` on an app from ``create_app`` (the router is included here; the lead
adds it to ``api.ROUTERS``)."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from orcamem import Memory
from orcamem.capability.settings import set_workspace_override
from orcamem.interfaces.http import create_app
from orcamem.interfaces.http.api.capability import router
from servers import LOCAL_BASE


def make_app(memory: Memory) -> object:
    app = create_app(memory)
    if not any(getattr(r, "path", "") == "/api/capability" for r in app.routes):
        app.include_router(router, prefix="/api")
    return app


def test_the_api_surfaces_settings_state_and_notes(tmp_path: Path) -> None:
    set_workspace_override(tmp_path, "enabled", True)
    with Memory(":memory:") as memory:
        app = make_app(memory)
        client = TestClient(app, base_url=LOCAL_BASE)
        missing = client.get("/api/capability")
        assert missing.status_code == 503 and "workspace" in missing.json()["error"]["message"]
        app.state.capability_workspace = tmp_path  # type: ignore[attr-defined]
        app.state.capability_instance_config = tmp_path / "none.json"  # type: ignore[attr-defined]
        body = client.get("/api/capability").json()
    rows = {row["key"]: row for row in body["settings"]["fields"]}
    assert rows["enabled"] == {
        "key": "enabled",
        "value": True,
        "origin": "workspace",
        "badge": "Workspace override",
        "clear": f"orcamem doctor --clear enabled --workspace {tmp_path}",
    }
    assert body["provider"]["state"] == "ready" and body["provider"]["notes"]
    assert not (tmp_path / "memory").exists()
