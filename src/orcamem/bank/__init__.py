"""Seed 002, the Memory Bank: profile-scoped memories with a composite score and S3 persistence.

``MemoryBank`` keeps each profile's memories in an in-memory index backed by an object store
(``S3ObjectStore``, ``FileObjectStore`` or ``MemoryObjectStore``): ``bank.py`` the bank and its
tools, ``profiles.py`` the profiles and their spaces, ``record.py`` the stored JSON form,
``processor.py`` the extraction model call, ``objects/`` the persistence tier.
"""

from .bank import BankHit, BankPage, MemoryBank, ProfileBank
from .objects import FileObjectStore, MemoryObjectStore, ObjectStore, S3ObjectStore
from .processor import MemoryProcessor
from .profiles import MEMORY_TOOLS, Profile, read_profiles_file, space_for, validate_profile
from .record import BankMemory

__all__ = [
    "MEMORY_TOOLS",
    "BankHit",
    "BankMemory",
    "BankPage",
    "FileObjectStore",
    "MemoryBank",
    "MemoryObjectStore",
    "MemoryProcessor",
    "ObjectStore",
    "Profile",
    "ProfileBank",
    "S3ObjectStore",
    "read_profiles_file",
    "space_for",
    "validate_profile",
]
