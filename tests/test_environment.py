"""Every environment variable orcamem reads is stripped before each test (``conftest.py``), so
no developer's bucket, key or home reaches a test: this scans ``src`` for every read and fails
on one the strip list lacks, or on a read whose variable it cannot name."""

from __future__ import annotations

import ast
import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import conftest

SRC = Path(__file__).resolve().parents[1] / "src"
ENV_RECEIVERS = {"environ", "env"}
"""Names a mapping of the environment goes by in src (``os.environ``, an ``environ=``
argument, or ``env = os.environ if environ is None else environ``)."""


FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class Unresolved(Exception):
    """A read whose variable name the scan cannot work out."""


@dataclass(frozen=True)
class Module:
    path: Path
    tree: ast.Module
    parents: dict[ast.AST, ast.AST]

    @classmethod
    def parse(cls, path: Path) -> Module:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        return cls(path, tree, parents)

    def where(self, node: ast.AST) -> str:
        shown = self.path.relative_to(SRC) if self.path.is_relative_to(SRC) else self.path.name
        return f"{shown}:{getattr(node, 'lineno', '?')}"

    def scope_of(self, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.Module:
        current = self.parents.get(node)
        while current is not None and not isinstance(current, FUNCTIONS):
            current = self.parents.get(current)
        return current or self.tree


def _modules() -> dict[str, Module]:
    return {
        ".".join(path.relative_to(SRC).with_suffix("").parts): Module.parse(path)
        for path in sorted(SRC.rglob("*.py"))
    }


MODULES = _modules()


def _module_named(module: Module, level: int, name: str | None) -> Module | None:
    dotted = ".".join(module.path.relative_to(SRC).with_suffix("").parts).split(".")
    if module.path.name != "__init__.py":
        dotted = dotted[:-1]
    base = dotted[: len(dotted) - (level - 1)] if level else []
    return MODULES.get(".".join([*base, *(name.split(".") if name else [])]))


class Resolver:
    """The variable names an expression can hold, followed through constants, imports,
    f-strings, loops over literals, and the arguments a function is called with."""

    def __init__(self, module: Module) -> None:
        self.module = module

    def names(self, expr: ast.AST) -> set[str]:
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            return {expr.value}
        if isinstance(expr, (ast.Tuple, ast.List)):
            return set().union(*(self.names(element) for element in expr.elts))
        if isinstance(expr, ast.JoinedStr):
            parts = [
                self.names(part.value) if isinstance(part, ast.FormattedValue) else {part.value}
                for part in expr.values
            ]
            return {"".join(choice) for choice in itertools.product(*parts)}
        if isinstance(expr, ast.Starred):
            return self.names(expr.value)
        if isinstance(expr, ast.Name):
            return self._name(expr)
        raise Unresolved(self.module.where(expr))

    def _name(self, name: ast.Name) -> set[str]:
        scope = self.module.scope_of(name)
        if isinstance(scope, FUNCTIONS):
            for node in ast.walk(scope):  # a loop or comprehension variable over literals
                loops = (
                    [(node.target, node.iter)]
                    if isinstance(node, ast.For)
                    else [(g.target, g.iter) for g in node.generators]
                    if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp))
                    else []
                )
                for target, iterable in loops:
                    if isinstance(target, ast.Name) and target.id == name.id:
                        return self.names(iterable)
            arguments = scope.args
            positional = [*arguments.posonlyargs, *arguments.args]
            if arguments.vararg is not None and arguments.vararg.arg == name.id:
                return self._call_arguments(scope, len(positional))
            for index, argument in enumerate([*positional, *arguments.kwonlyargs]):
                if argument.arg == name.id:
                    return self._call_arguments(scope, (index, argument.arg))
        return self._global(self.module, name.id, name)

    def _call_arguments(
        self, function: ast.FunctionDef | ast.AsyncFunctionDef, which: tuple[int, str] | int
    ) -> set[str]:
        """What the module's calls of ``function`` pass for one parameter (``(index, name)``),
        or for ``*args`` (the index where they start)."""
        found: set[str] = set()
        calls = [
            node
            for node in ast.walk(self.module.tree)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == function.name
        ]
        if not calls:
            raise Unresolved(f"{self.module.where(function)}: {function.name} is never called")
        for call in calls:
            if isinstance(which, int):
                passed = list(call.args[which:])
            else:
                index, keyword = which
                passed = [k.value for k in call.keywords if k.arg == keyword]
                if not passed and index < len(call.args):
                    passed = [call.args[index]]
            found |= set().union(*(self.names(value) for value in passed))
        return found

    def _global(self, module: Module, identifier: str, at: ast.AST) -> set[str]:
        for statement in module.tree.body:
            if isinstance(statement, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == identifier for t in statement.targets
            ):
                return Resolver(module).names(statement.value)
            if isinstance(statement, ast.ImportFrom):
                for alias in statement.names:
                    if (alias.asname or alias.name) == identifier:
                        source = _module_named(module, statement.level, statement.module)
                        if source is not None:
                            return self._global(source, alias.name, at)
        raise Unresolved(f"{self.module.where(at)}: what {identifier} holds")


def _is_environment(expr: ast.AST) -> bool:
    if isinstance(expr, ast.Attribute):
        return expr.attr == "environ"
    return isinstance(expr, ast.Name) and expr.id in ENV_RECEIVERS


def reads(module: Module) -> Iterator[tuple[ast.AST, ast.AST]]:
    """(node, the expression naming the variable) for every environment read in ``module``."""
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Subscript) and _is_environment(node.value):
            yield node, node.slice
        elif isinstance(node, ast.Compare) and any(
            isinstance(op, (ast.In, ast.NotIn)) for op in node.ops
        ):
            if any(_is_environment(side) for side in node.comparators):
                yield node, node.left
        elif isinstance(node, ast.Call):
            func = node.func
            if (isinstance(func, ast.Attribute) and func.attr == "getenv") or (
                isinstance(func, ast.Attribute)
                and func.attr in {"get", "pop", "setdefault"}
                and _is_environment(func.value)
                and node.args
            ):
                yield node, node.args[0]
            for keyword in node.keywords:
                if keyword.arg == "envvar":
                    yield node, keyword.value


def names_read() -> dict[str, str]:
    """Every variable name src reads → where (one place each)."""
    found: dict[str, str] = {}
    unresolved = []
    for module in MODULES.values():
        for node, expr in reads(module):
            try:
                for name in Resolver(module).names(expr):
                    found.setdefault(name, module.where(node))
            except Unresolved as exc:
                unresolved.append(f"{module.where(node)} ({exc})")
    assert not unresolved, f"environment reads the scan cannot name: {unresolved}"
    return found


def test_every_variable_src_reads_is_stripped_before_each_test() -> None:
    read = names_read()
    missing = {name: where for name, where in read.items() if name not in conftest.ENV_NAMES}
    missing = {k: v for k, v in missing.items() if k not in conftest.PASSED_THROUGH}
    assert not missing, f"read by src but not stripped by tests/conftest.py: {missing}"


def test_the_fallback_list_is_what_src_reads_and_no_guess() -> None:
    read = set(names_read())
    assert set(conftest.FALLBACK_ENV_NAMES) == read - set(conftest.PASSED_THROUGH)


def test_the_scan_finds_each_kind_of_read(tmp_path: Path) -> None:
    """The scanner on a module with one read of each kind (so a blind scan cannot pass)."""
    source = tmp_path / "sample.py"
    source.write_text(
        "import os\nimport typer\nNAME = 'A_CONST'\n"
        "def pick(env, *names):\n    return [env.get(n) for n in names]\n"
        "def s3(env, prefix):\n    return pick(env, f'{prefix}BUCKET', 'B_LITERAL')\n"
        "s3(os.environ, 'X_')\n"
        "os.environ['C_ITEM']; os.getenv('D_GETENV'); os.environ.get(NAME)\n"
        "'E_IN' in os.environ\n"
        "opt = typer.Option(envvar='F_TYPER')\n"
        "def dynamic(key):\n    return os.environ[key.upper()]\n"
        "dynamic('x')\n",
        encoding="utf-8",
    )
    module = Module.parse(source)
    named, unresolved = set(), []
    for node, expr in reads(module):
        try:
            named |= Resolver(module).names(expr)
        except Unresolved:
            unresolved.append(node.lineno)
    assert named == {"X_BUCKET", "B_LITERAL", "C_ITEM", "D_GETENV", "A_CONST", "E_IN", "F_TYPER"}
    assert unresolved == [13]  # os.environ[key.upper()] cannot be named: the scan says so


def test_a_developers_variables_do_not_reach_a_test(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The autouse fixture's strip, on a shell that has every variable orcamem reads set."""
    for name in conftest.ENV_NAMES:
        monkeypatch.setenv(name, "from-the-developers-shell")
    monkeypatch.setenv("PYTHONPATH", "kept")
    conftest.strip_environment(monkeypatch, tmp_path)
    left = {
        name for name in conftest.ENV_NAMES if os.environ.get(name) == "from-the-developers-shell"
    }
    assert left == set()
    assert os.environ["ORCA_HOME"] == str(tmp_path / "orca-home")  # the test's own home
    assert os.environ["PYTHONPATH"] == "kept"  # what the tests' own subprocesses import by
    for name in ("S3_BUCKET", "INTERNAL_S3_BUCKET", "AWS_ACCESS_KEY_ID", "ANTHROPIC_API_KEY"):
        assert name in conftest.ENV_NAMES
