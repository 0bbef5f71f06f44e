import pytest

from execfarm import parse_memory
from execfarm._config import from_env, parse_token_file
from execfarm.errors import _details


@pytest.mark.parametrize("v,want", [("256Mi", 256 << 20), ("1G", 10**9), ("1024", 1024), (5, 5), ("2Ki", 2048), (None, 0)])
def test_parse_memory(v, want):
    assert parse_memory(v) == want


@pytest.mark.parametrize("v", ["256MB", "-1", "x", -3, "1.5Gi"])
def test_parse_memory_refuses(v):
    with pytest.raises(ValueError):
        parse_memory(v)


def test_from_env():
    assert from_env({}).configured is False
    assert from_env({}).target == "unix:/run/execfarm/execfarm.sock"
    assert from_env({"SANDBOX_SOCKET_PATH": "/x.sock"}).target == "unix:/x.sock"
    # A host or a port alone means TCP, as ProDisco's client and the CLI read them.
    assert from_env({"SANDBOX_TCP_PORT": "7000"}).target == "localhost:7000"
    assert from_env({"SANDBOX_TCP_HOST": "10.0.0.1"}).target == "10.0.0.1:50051"
    assert from_env({"SANDBOX_USE_TCP": "false", "SANDBOX_TCP_HOST": "h"}).target.startswith("unix:")
    assert from_env({"SANDBOX_USE_TCP": "true"}).configured
    assert from_env({"EXECFARM_TOKEN": "t" * 20}).token == "t" * 20
    with pytest.raises(ValueError, match="SANDBOX_TCP_PORT"):
        from_env({"SANDBOX_TCP_PORT": "99999"})


def test_token_file():
    assert parse_token_file("abcdefghijklmnopqrstuvwx\n") == "abcdefghijklmnopqrstuvwx"
    assert parse_token_file("# c\nagent abcdefghijklmnopqrstuvwx\n") == "abcdefghijklmnopqrstuvwx"
    with pytest.raises(ValueError, match="one line"):
        parse_token_file("a abcdefghijklmnopqrstuvwx\nb abcdefghijklmnopqrstuvwy\n")


def test_details_malformed_keeps_going():
    # A truncated google.rpc.Status is read as far as it goes, never raises.
    assert _details(b"\x1a\xff") == ("", "", None, {})
