"""The one exception family of orcamem.

Every error a user can see is an ``OrcamemError``; each message says what was wrong and
what to do next. Subclasses co-inherit the matching builtin so ``except ValueError`` keeps
working for callers that do not know orcamem.

::

    OrcamemError
    ├── InvalidInputError (ValueError)        bad text, sizes, encodings, arguments
    │   ├── InvalidSpaceError                 a space name that breaks the naming rule
    │   └── DimensionMismatchError            a vector whose length is not the space's
    ├── NotFoundError (KeyError)              an unknown id
    ├── EmbedderMismatchError                 the space was embedded by another model
    ├── StoreError (RuntimeError)             the database cannot be used
    │   ├── CorruptStoreError                 not SQLite, or damaged
    │   ├── ReadOnlyStoreError (PermissionError)
    │   └── SchemaTooNewError                 written by a newer orcamem
    ├── EmbedderError (RuntimeError)          an embedder failed or is misconfigured
    └── ClosedError (RuntimeError)            use after ``close()``

``status`` is the HTTP status an interface should answer with.
"""

from __future__ import annotations

__all__ = [
    "ClosedError",
    "CorruptStoreError",
    "DimensionMismatchError",
    "EmbedderError",
    "EmbedderMismatchError",
    "InvalidInputError",
    "InvalidSpaceError",
    "NotFoundError",
    "OrcamemError",
    "ReadOnlyStoreError",
    "SchemaTooNewError",
    "StoreError",
]


class OrcamemError(Exception):
    """Base of every orcamem error."""

    status = 500


class InvalidInputError(OrcamemError, ValueError):
    """The caller passed something orcamem refuses to store or use."""

    status = 400


class InvalidSpaceError(InvalidInputError):
    """A space name breaks the naming rule."""


class DimensionMismatchError(InvalidInputError):
    """A vector's length differs from the dimension its space records."""


class NotFoundError(OrcamemError, KeyError):
    """No record has that id (in that space)."""

    status = 404

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class EmbedderMismatchError(OrcamemError):
    """The space's vectors were made by a different embedder than the one in use."""

    status = 409


class StoreError(OrcamemError, RuntimeError):
    """The store cannot be opened or written."""

    status = 503


class CorruptStoreError(StoreError):
    """The file is not an orcamem SQLite database, or it is damaged."""


class ReadOnlyStoreError(StoreError, PermissionError):
    """The database or its directory cannot be written."""


class SchemaTooNewError(StoreError):
    """The database was written by a newer orcamem than this one."""


class EmbedderError(OrcamemError, RuntimeError):
    """An embedder failed, answered badly, or is not installed."""

    status = 502


class ClosedError(OrcamemError, RuntimeError):
    """The object was used after ``close()``."""

    status = 500
