"""The package as a user gets it (issue 16 item 7): ``python -m build`` makes an sdist and a
wheel from the tracked files, ``twine check`` passes them, and a fresh venv that installs only
the wheel (its dependencies from the index, pinned by requirements.lock; no checkout on the
path) runs ``orcamem demo`` with the model the wheel ships, offline: no model is downloaded."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    done = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, env=env, cwd=cwd, timeout=1500
    )
    assert done.returncode == 0, f"{args}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done.stdout


def _tracked_copy(into: Path) -> Path:
    """The repository's tracked files (what a clone holds), so the build writes nothing here."""
    names = _run("git", "-C", ROOT, "ls-files", "-z").split("\0")
    for name in filter(None, names):
        source = ROOT / name
        if source.is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name)
    return into


@pytest.mark.slow
@pytest.mark.timeout(1800)  # a fresh venv installs every dependency (minutes on a busy machine)
def test_the_wheel_builds_passes_twine_and_runs_the_demo_in_a_fresh_venv(tmp_path: Path) -> None:
    tree = _tracked_copy(tmp_path / "tree")
    dist = tmp_path / "dist"
    _run(sys.executable, "-m", "build", "--outdir", dist, tree)
    wheel = next(dist.glob("orcamem-*-py3-none-any.whl"))
    sdist = next(dist.glob("orcamem-*.tar.gz"))
    assert "PASSED" in _run(sys.executable, "-m", "twine", "check", "--strict", wheel, sdist)
    with zipfile.ZipFile(wheel) as archive:
        shipped = set(archive.namelist())
    for data in (
        "orcamem/_kernel/assets/m2v-minilm-l6-v2/model.safetensors",
        "orcamem/_kernel/assets/m2v-minilm-l6-v2/tokenizer.json",
        "orcamem/samples/conversation.json",
        "orcamem/bench/unrelated.txt",
    ):
        assert data in shipped, f"the wheel lacks {data}"

    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", venv)
    python = venv / "bin" / "python"
    pip = (python, "-m", "pip", "install", "--quiet", "--no-compile", "--disable-pip-version-check")
    # without PYTHONPATH: a checkout's orcamem.egg-info on it would pass for an installed orcamem
    outside = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    _run(*pip, "-c", ROOT / "requirements.lock", wheel, env=outside)
    home = tmp_path / "home"
    home.mkdir()
    clean = {  # no PYTHONPATH: only what the venv installed can be imported
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(home),
        "ORCA_HOME": str(home / ".orca"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    where = _run(python, "-c", "import orcamem; print(orcamem.__file__)", env=clean, cwd=home)
    assert where.strip().startswith(str(venv))
    out = _run(venv / "bin" / "orcamem", "demo", "--db", home / "demo.db", env=clean, cwd=home)
    assert "[user.home city: Bangalore" in out, out  # the demo's blocks, as in the README
    assert "[FORBIDDEN: Never chain PowerShell commands with semicolons]" in out
    assert not (home / ".cache" / "huggingface").exists()  # nothing was fetched from a hub
    shown = _run(venv / "bin" / "orcamem", "config", "show", env=clean, cwd=home)
    assert f"db = {home / '.orca' / 'memory.db'}  (default)" in shown
