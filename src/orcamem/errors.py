"""The one exception family of orcamem: every class lives here.

Every error a user can see is an ``OrcamemError``; each message says what was wrong and
what to do next. Subclasses co-inherit the matching builtin so ``except ValueError`` keeps
working for callers that do not know orcamem. ``status`` is the HTTP status an interface
answers with (the REST handler, the proxy and MCP map errors once, by this attribute).

::

    OrcamemError
    ├── InvalidInputError (ValueError)          bad text, sizes, encodings, arguments
    │   ├── InvalidSpaceError                   a space name that breaks the naming rule
    │   ├── DimensionMismatchError              a vector whose length is not the space's
    │   └── MarkdownParseError                  a Markdown memory file that cannot be read
    ├── NotFoundError (KeyError)                an unknown id
    ├── EmbedderMismatchError                   the space was embedded by another model
    ├── StoreError (RuntimeError)               the database or object store cannot be used
    │   ├── CorruptStoreError                   not SQLite, or damaged
    │   ├── ReadOnlyStoreError (PermissionError)
    │   ├── SchemaTooNewError                   written by a newer orcamem
    │   └── PreconditionFailedError             a conditional object write lost the race
    ├── EmbedderError (RuntimeError)            an embedder failed or is misconfigured
    ├── ModelError (RuntimeError)               a chat model's server failed, refused or is not set up
    │   ├── ModelTimeoutError (TimeoutError)    no answer within the call's deadline
    │   │   └── UpstreamTimeoutError            the proxy's upstream did not answer in time
    │   ├── ModelOutputError                    empty, unparseable or off-schema model output
    │   ├── UpstreamNotConfiguredError          the proxy has no upstream model server
    │   └── UpstreamUnreachableError            the proxy's upstream refused the connection
    ├── ClosedError (RuntimeError)              use after ``close()``
    ├── QueueFullError (RuntimeError)           a space already has its maximum of active jobs
    ├── LeaseLostError (RuntimeError)           a job worker no longer owns the job it is finishing
    ├── AttemptFailed (RuntimeError)            a job handler's output is unusable: a failed attempt
    │   └── ExtractionFailed                    the consolidation extractor's output is unusable
    ├── TransientError (RuntimeError)           a temporary failure: the job is retried in 30 s
    ├── JobCancelled (RuntimeError)             a job was stopped: lease released, no attempt used
    ├── RevisionConflictError                   a revisioned change named a stale revision
    ├── IndexUnavailable                        a derived search index cannot be used (recall falls back)
    ├── AuthError (PermissionError)             no valid API key
    ├── ForbiddenError (PermissionError)        a valid key, but not for that space
    ├── ProviderError (RuntimeError)            a memory provider failed or was too slow
    ├── SettingsFileError (RuntimeError)        a settings file cannot be changed safely
    ├── MemoryOffError (RuntimeError)           memory is off in this workspace
    ├── CapabilityNotConfigured                 the server has no workspace for the capability
    └── BankUnavailableError (RuntimeError)     the Memory Bank is not wired into this server
"""

from __future__ import annotations

__all__ = [
    "AttemptFailed",
    "AuthError",
    "BankUnavailableError",
    "CapabilityNotConfigured",
    "ClosedError",
    "CorruptStoreError",
    "DimensionMismatchError",
    "EmbedderError",
    "EmbedderMismatchError",
    "ExtractionFailed",
    "ForbiddenError",
    "IndexUnavailable",
    "InvalidInputError",
    "InvalidSpaceError",
    "JobCancelled",
    "LeaseLostError",
    "MarkdownParseError",
    "MemoryOffError",
    "ModelError",
    "ModelOutputError",
    "ModelTimeoutError",
    "NotFoundError",
    "OrcamemError",
    "PreconditionFailedError",
    "ProviderError",
    "QueueFullError",
    "ReadOnlyStoreError",
    "RevisionConflictError",
    "SchemaTooNewError",
    "SettingsFileError",
    "StoreError",
    "TransientError",
    "UpstreamNotConfiguredError",
    "UpstreamTimeoutError",
    "UpstreamUnreachableError",
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


class ModelError(OrcamemError, RuntimeError):
    """A chat model's server could not be reached, refused the call, or is not configured."""

    status = 502


class ModelTimeoutError(ModelError, TimeoutError):
    """The model gave no complete answer within the call's deadline."""

    status = 504


class ModelOutputError(ModelError):
    """The model answered, but with nothing usable: empty, not JSON, or not the asked shape."""


class ClosedError(OrcamemError, RuntimeError):
    """The object was used after ``close()``."""

    status = 500


class QueueFullError(OrcamemError, RuntimeError):
    """A space already has its maximum of active (pending or running) jobs; nothing was queued."""

    status = 429


class LeaseLostError(OrcamemError, RuntimeError):
    """The caller's lease on a job expired or was taken over (its fence is stale).

    Nothing the caller tried to write was written; another worker owns the job, or it already
    finished.
    """

    status = 409


class AttemptFailed(OrcamemError, RuntimeError):
    """A job handler's output is unusable (empty, malformed, unclassified or over a limit).

    The attempt counts: the job is retried until its attempts are used, then marked failed.
    Only an explicit ``NOTHING`` is a successful empty result.
    """

    status = 502


class TransientError(OrcamemError, RuntimeError):
    """A temporary failure (a lock, a busy store): the job is rescheduled without using an attempt."""

    status = 503


class JobCancelled(OrcamemError, RuntimeError):
    """A job was stopped before it finished: its lease is released and no attempt is used."""

    status = 409


class RevisionConflictError(OrcamemError):
    """A revisioned change (a local-memory deletion) named a revision that is no longer current.

    Nothing was changed: read the current revision, check what it holds, and ask again.
    """

    status = 409


class MarkdownParseError(InvalidInputError):
    """A Markdown memory file the parser cannot read (the store skips it, never fatal)."""


class PreconditionFailedError(StoreError):
    """A conditional write lost: the key already exists (``if_none_match``) or the object is no
    longer the version named by ``if_match`` (changed or deleted by another writer)."""

    status = 412


class UpstreamNotConfiguredError(ModelError):
    """The proxy has no upstream model server to forward to."""

    status = 503


class UpstreamUnreachableError(ModelError):
    """The upstream model server refused or dropped the connection."""

    status = 502


class UpstreamTimeoutError(ModelTimeoutError):
    """The upstream model server sent no answer within ``upstream_timeout_s``."""

    status = 504


class ExtractionFailed(AttemptFailed):
    """The consolidation extractor's output is unusable (empty, malformed, over the limits)."""


class IndexUnavailable(OrcamemError):
    """A derived index is missing, stale, corrupt, or cannot be built (internal: recall falls
    back to the authority)."""

    status = 503


class AuthError(OrcamemError, PermissionError):
    """No valid API key was given."""

    status = 401


class ForbiddenError(OrcamemError, PermissionError):
    """The key is valid but not for that space (or not an admin key)."""

    status = 403


class ProviderError(OrcamemError, RuntimeError):
    """A memory provider operation failed or took too long (it is treated as unavailable)."""

    status = 503


class SettingsFileError(OrcamemError, RuntimeError):
    """A config file cannot be changed safely (it is not JSON, or not the expected shape)."""

    status = 409


class MemoryOffError(OrcamemError, RuntimeError):
    """Memory is off in this workspace (or was when the session started): nothing is done."""

    status = 409


class CapabilityNotConfigured(OrcamemError):
    """The server was started without a workspace for the memory capability."""

    status = 503


class BankUnavailableError(OrcamemError, RuntimeError):
    """The Memory Bank is not wired into this server."""

    status = 503
