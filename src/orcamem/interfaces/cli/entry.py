"""The ``orcamem`` command's entry point: ``orcamem turn …`` and ``orcamem hooks …`` run their
own command group without loading the rest of the CLI.

Hosts call those two on every prompt and every finished turn; the full app imports all four
memory systems (the engine, numpy, the bank) first, which costs a hook a second or more before
it reads its payload. Everything else goes to :func:`orcamem.interfaces.cli.main.main`.
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def main() -> None:
    group = sys.argv[1] if len(sys.argv) > 1 else ""
    if group == "turn":
        from .turn import turn_app as app
    elif group == "hooks":
        from .hooks import hooks_app as app
    else:
        from .main import main as full

        full()
        return
    app(args=sys.argv[2:], prog_name=f"orcamem {group}")


if __name__ == "__main__":
    main()
