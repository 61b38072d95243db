"""The package face stays small: Memory, AsyncMemory, Config and the error family."""

import orcamem


def test_public_names_are_pinned() -> None:
    assert sorted(orcamem.__all__) == sorted(
        [
            "AsyncMemory",
            "ClosedError",
            "Config",
            "CorruptStoreError",
            "DimensionMismatchError",
            "EmbedderError",
            "EmbedderMismatchError",
            "InvalidInputError",
            "InvalidSpaceError",
            "Memory",
            "ModelError",
            "ModelOutputError",
            "ModelTimeoutError",
            "NotFoundError",
            "OrcamemError",
            "ReadOnlyStoreError",
            "SchemaTooNewError",
            "StoreError",
        ]
    )
    for name in orcamem.__all__:
        assert hasattr(orcamem, name)
