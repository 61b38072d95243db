"""The built-in provider's privacy is structural: every byte of its I/O lives in one module that
imports the file system and nothing else. These tests read the source's syntax tree, so a
change that adds a network client, a subprocess, a dynamic import or an environment read to
that module (or I/O anywhere else in the provider) fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import orcamem

SRC = Path(orcamem.__file__).resolve().parent
IO_MODULE = SRC / "capability" / "markdown" / "io.py"
PROVIDER_MODULES = [
    SRC / "capability" / "markdown" / "store.py",
    SRC / "recall" / "markdown.py",
    SRC / "capability" / "providers" / "markdown.py",
]

KERNEL_FILES = SRC / "_kernel" / "files.py"
ALLOWED_IMPORTS = {
    "__future__": None,
    "pathlib": {"Path"},
    "os": {"fsync"},
    "orcamem._kernel.files": {
        "FileLock",
        "fsync_dir",
        "make_dirs",
        "remove_stale_temps",
        "write_atomic",
        "write_new",
    },
}
"""Module → the names it may give (None: any). ``os`` only for ``fsync`` (durable writes); the
kernel's file helpers for the one atomic write, directory fsync and crash-leftover sweep."""
KERNEL_FILES_IMPORTS = {
    "__future__",
    "contextlib",
    "os",
    "re",
    "secrets",
    "threading",
    "collections.abc",
    "pathlib",
    "filelock",
    "errors",
    "clock",
}
"""What those helpers may import: the local file system, a file lock, the clock, the errors."""

FORBIDDEN_NAMES = {
    "environ",
    "getenv",
    "putenv",
    "expanduser",
    "expandvars",
    "home",
    "__import__",
    "importlib",
    "import_module",
    "exec",
    "eval",
    "compile",
    "system",
    "popen",
    "socket",
    "urlopen",
    "subprocess",
    "getattr",
}
DELETERS = {"unlink", "rmdir", "rmtree", "remove", "removedirs", "truncate"}
IO_CALLS = {
    "open",
    "read_text",
    "read_bytes",
    "write_text",
    "write_bytes",
    "mkdir",
    "rename",
    "replace",
    "touch",
    "glob",
    "rglob",
    "iterdir",
    "stat",
    "exists",
    "is_file",
    "is_dir",
    "fsync",
    "scandir",
    "listdir",
}
NETWORKISH = {"socket", "http", "urllib", "httpx", "requests", "subprocess", "os", "shutil", "io"}


def tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def names_used(module: ast.Module) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(module):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.alias):
            found.add(node.asname or node.name)
    return found


def own_io_calls(module: ast.Module) -> set[str]:
    """I/O calls not made through the I/O module (imported as ``io``): ``open(...)`` and
    ``<anything but io>.read_text(...)`` and the like."""
    found: set[str] = set()
    for node in ast.walk(module):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "open":
            found.add("open")
        elif (
            isinstance(func, ast.Attribute)
            and func.attr in IO_CALLS
            and not (isinstance(func.value, ast.Name) and func.value.id == "io")
        ):
            found.add(func.attr)
    return found


def called(module: ast.Module) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(module):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                found.add(func.id)
            elif isinstance(func, ast.Attribute):
                found.add(func.attr)
    return found


def test_the_io_module_imports_the_file_system_and_nothing_else() -> None:
    module = tree(IO_MODULE)
    for node in ast.walk(module):
        if isinstance(node, ast.Import):
            pytest.fail(f"markdown_io may not `import {node.names[0].name}` (line {node.lineno})")
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"relative import on line {node.lineno}"
            assert node.module in ALLOWED_IMPORTS, f"imports {node.module} (line {node.lineno})"
            allowed = ALLOWED_IMPORTS[node.module or ""]
            given = {alias.name for alias in node.names}
            assert allowed is None or given <= allowed, f"{node.module}: {given - allowed}"


def test_the_kernel_file_helpers_the_io_module_uses_touch_only_local_files() -> None:
    module = tree(KERNEL_FILES)
    for node in ast.walk(module):
        if isinstance(node, ast.Import):
            assert {a.name for a in node.names} <= KERNEL_FILES_IMPORTS, node.lineno
        if isinstance(node, ast.ImportFrom):
            name = (node.module or "").lstrip(".")
            assert name in KERNEL_FILES_IMPORTS, f"_kernel/files.py imports {node.module}"
    forbidden = FORBIDDEN_NAMES - {"compile"}  # re.compile: the temp-file name pattern
    assert not names_used(module) & forbidden, sorted(names_used(module) & forbidden)


def test_the_io_module_reads_no_environment_and_imports_nothing_dynamically() -> None:
    used = names_used(tree(IO_MODULE))
    assert not used & FORBIDDEN_NAMES, sorted(used & FORBIDDEN_NAMES)


def test_nothing_in_the_provider_deletes_a_file() -> None:
    """No memory file, that is: the one removal is the kernel's sweep of ``.<name>.<pid>.<hex>
    .tmp`` copies a killed writer left (``tests/test_files_durability.py`` shows it keeps
    every ``.md``)."""
    for path in [IO_MODULE, *PROVIDER_MODULES]:
        calls = called(tree(path))
        assert not calls & DELETERS, f"{path.name} calls {sorted(calls & DELETERS)}"


@pytest.mark.parametrize("path", PROVIDER_MODULES, ids=lambda p: p.name)
def test_the_rest_of_the_provider_does_no_io_of_its_own(path: Path) -> None:
    module = tree(path)
    for node in ast.walk(module):
        if isinstance(node, ast.Import):
            assert not {a.name.split(".")[0] for a in node.names} & NETWORKISH, path.name
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            assert (node.module or "").split(".")[0] not in NETWORKISH, (path.name, node.module)
    assert not own_io_calls(module), f"{path.name} does its own I/O: {own_io_calls(module)}"
    assert not names_used(module) & {"environ", "getenv", "__import__", "importlib"}


def test_the_checker_catches_a_forbidden_module() -> None:
    """The rules are not vacuous: a module that sneaks in a subprocess fails them."""
    bad = ast.parse("import subprocess\nfrom os import environ\nsubprocess.run(['curl'])\n")
    imports = [n for n in ast.walk(bad) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert any(isinstance(n, ast.Import) for n in imports)
    assert "environ" in names_used(bad) and "run" in called(bad)
    sneaky = ast.parse("from pathlib import Path\nPath('x').write_text('y')\nio.read_text(p)\n")
    assert own_io_calls(sneaky) == {"write_text"}
