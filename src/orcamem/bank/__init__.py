"""Seed 002, the Memory Bank: profile-scoped memories with a composite score and S3 persistence.

``MemoryBank`` keeps each profile's memories in an in-memory index backed by an object store
(``S3ObjectStore``, ``FileObjectStore`` or ``MemoryObjectStore``).
"""

from .bank import BankHit, BankMemory, MemoryBank, Profile, ProfileBank, read_profiles_file
from .objects import FileObjectStore, MemoryObjectStore, ObjectStore, S3ObjectStore

__all__ = [
    "BankHit",
    "BankMemory",
    "FileObjectStore",
    "MemoryBank",
    "MemoryObjectStore",
    "ObjectStore",
    "Profile",
    "ProfileBank",
    "S3ObjectStore",
    "read_profiles_file",
]
