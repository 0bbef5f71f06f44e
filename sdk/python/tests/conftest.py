"""Fixtures: a real `execfarm serve` (the repository's bin/execfarm, or
EXECFARM_BIN), started once for the session through the package's own
embedded mode, and a server-mode client of it."""

import os
from pathlib import Path

import pytest

import execfarm
from execfarm._embedded import EmbeddedServer

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def binary() -> str:
    b = os.environ.get("EXECFARM_BIN") or str(REPO / "bin" / "execfarm")
    if not os.access(b, os.X_OK):
        pytest.fail(f"no execfarm binary at {b}: run `make build` first (or set EXECFARM_BIN)")
    if os.geteuid() != 0:
        pytest.fail("these tests run a real execfarm serve, which needs root")
    return b


@pytest.fixture(scope="session")
def server(binary: str):
    s = EmbeddedServer(binary)
    s.start()
    yield s
    s.close()


@pytest.fixture(scope="session")
def ef(server: EmbeddedServer):
    with execfarm.connect(server.target, token=server.token) as c:
        yield c


@pytest.fixture
def sbx(ef):
    with ef.create_sandbox(runtime="shell", ttl=120, labels={"suite": "pytest"}) as s:
        yield s
