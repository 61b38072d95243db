"""The package face is a contract: every system importable from ``orcamem``, ``__all__`` equal to
the public names, and the old deep paths kept for one release with a warning (issue 10)."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys
import types

import pytest

import orcamem
from orcamem import errors

SYSTEMS = ["MemoryBank", "Capability", "LocalMemory"]
PUBLIC_PACKAGES = ["orcamem.engine", "orcamem.bank", "orcamem.capability", "orcamem.local"]


def _public_names(module: types.ModuleType) -> set[str]:
    """Names a user can reach that are not modules and not private."""
    names = set(dir(module))
    return {
        name
        for name in names
        if not name.startswith("_")
        and not isinstance(getattr(module, name), types.ModuleType)
        and name != "TYPE_CHECKING"
    }


def test_the_package_exports_the_four_systems_config_and_every_error() -> None:
    family = {
        name
        for name, value in vars(errors).items()
        if inspect.isclass(value) and issubclass(value, errors.OrcamemError)
    }
    assert set(orcamem.__all__) == {"AsyncMemory", "Config", "Memory", *SYSTEMS, *family}
    assert set(errors.__all__) == family


def test_all_equals_the_public_names_of_the_package() -> None:
    assert set(orcamem.__all__) == _public_names(orcamem)
    for name in orcamem.__all__:
        assert getattr(orcamem, name).__name__ == name


@pytest.mark.parametrize("package", PUBLIC_PACKAGES)
def test_each_system_package_pins_its_public_names(package: str) -> None:
    module = importlib.import_module(package)
    assert set(module.__all__) == _public_names(module)


def test_every_error_lives_in_errors_and_inherits_the_family() -> None:
    for name in errors.__all__:
        cls = getattr(errors, name)
        assert cls.__module__ == "orcamem.errors"
        assert issubclass(cls, errors.OrcamemError)
        assert isinstance(cls.status, int) and 400 <= cls.status <= 599


def test_import_orcamem_stays_light() -> None:
    """The systems load on first use, so the engine's offline path imports no HTTP client."""
    code = (
        "import sys, orcamem; "
        "print(sorted(m for m in ('httpx', 'orcamem.bank', 'orcamem.local', "
        "'orcamem.capability') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    assert orcamem.MemoryBank.__module__ == "orcamem.bank.bank"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("orcamem.services.memory_bank", "orcamem.bank.bank"),
        ("orcamem.services.capability", "orcamem.capability.capability"),
        ("orcamem.stores.objects", "orcamem.bank.objects"),
        ("orcamem.stores.transcript", "orcamem.local.transcript"),
    ],
)
def test_an_old_deep_path_still_imports_with_a_deprecation_warning(old: str, new: str) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=new.replace(".", r"\.")):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)


def test_the_docs_taught_from_import_still_works() -> None:
    code = (
        "import warnings; warnings.simplefilter('error', DeprecationWarning)\n"
        "try:\n"
        "    from orcamem.services.memory_bank import MemoryBank\n"
        "except DeprecationWarning as exc:\n"
        "    print('warned:', exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "warned: orcamem.services.memory_bank moved to orcamem.bank.bank" in done.stdout
