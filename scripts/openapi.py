"""Write (or ``--check``) the OpenAPI document the TypeScript client is typed from.

    python scripts/openapi.py          # rewrite clients/typescript/openapi.json
    python scripts/openapi.py --check  # exit 1 if it differs from what `orcamem serve` publishes

``clients/typescript/src/schema.ts`` is generated from that file (``npm run generate``, which
``.ci/run`` re-runs and diffs), so a route changed on the server without both files failing CI
is not possible. The document is the one ``orcamem serve`` publishes (the REST API only).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from orcamem import Memory
from orcamem.interfaces.http.server import build_app
from orcamem.interfaces.http.settings import ServerSettings

TARGET = Path(__file__).resolve().parents[1] / "clients" / "typescript" / "openapi.json"


def document() -> str:
    """The published document, as the committed file spells it (sorted keys, one-space indent)."""
    with Memory(":memory:") as memory:
        published = build_app(memory, ServerSettings(), ("api",)).openapi()
    return json.dumps(published, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    current = document()
    if "--check" in argv:
        if TARGET.read_text(encoding="utf-8") == current:
            return 0
        print(
            f"{TARGET} is not the document `orcamem serve` publishes: run "
            "`python scripts/openapi.py && (cd clients/typescript && npm run generate)` and commit both",
            file=sys.stderr,
        )
        return 1
    TARGET.write_text(current, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
