"""Where the supervisor is: the environment the CLI reads
(supervisor/transport.FromEnv), and the bearer token."""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass

DEFAULT_SOCKET_PATH = "/run/execfarm/execfarm.sock"
DEFAULT_TCP_PORT = 50051
_MIN_TOKEN = 16  # transport.MinTokenLength


@dataclass(frozen=True)
class Target:
    """A supervisor's address. ``target`` is grpc's (``unix:/path`` or
    ``host:port``), ``address`` the human-readable one the CLI prints."""

    target: str
    address: str
    configured: bool
    token: str = ""


def from_env(env: Mapping[str, str] | None = None, *, socket_path: str | None = None,
             host: str | None = None, port: int | None = None, use_tcp: bool | None = None,
             token: str | None = None, token_file: str | None = None) -> Target:
    """The target the arguments, else the environment, name: a socket
    path (``SANDBOX_SOCKET_PATH``), or TCP when ``SANDBOX_USE_TCP`` is
    1/true or, without it, when a host or port is given
    (``SANDBOX_TCP_HOST``, ``SANDBOX_TCP_PORT``; default localhost:50051).
    ``configured`` is False when nothing is set (the default socket)."""
    e = os.environ if env is None else env
    sock = socket_path or e.get("SANDBOX_SOCKET_PATH", "")
    host = host or e.get("SANDBOX_TCP_HOST", "")
    if port is None and e.get("SANDBOX_TCP_PORT"):
        v = e["SANDBOX_TCP_PORT"]
        if not v.isdigit() or not 0 < int(v) <= 65535:
            raise ValueError(f"SANDBOX_TCP_PORT {v!r} is not a port number")
        port = int(v)
    if use_tcp is None:
        v = e.get("SANDBOX_USE_TCP", "")
        use_tcp = v == "1" or v.lower() == "true" if v else bool(host or port)
    tok = token if token is not None else _token(e, token_file)
    if use_tcp:
        h, p = host or "localhost", port or DEFAULT_TCP_PORT
        hp = f"[{h}]:{p}" if ":" in h else f"{h}:{p}"
        return Target(hp, hp, True, tok)
    path = sock or DEFAULT_SOCKET_PATH
    return Target("unix:" + path, "unix://" + path, bool(sock), tok)


def _token(e: Mapping[str, str], token_file: str | None) -> str:
    path = token_file or e.get("EXECFARM_TOKEN_FILE", "")
    if path:
        with open(path, encoding="ascii") as f:
            return parse_token_file(f.read(1 << 20), path)
    tok = e.get("EXECFARM_TOKEN", "")
    return tok.strip()


def parse_token_file(text: str, path: str = "token file") -> str:
    """The one token a client sends from a token file: its only line,
    ``TOKEN`` or ``NAME TOKEN`` (comments and blank lines ignored)."""
    lines = [ln.split() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    stripped = text.strip()
    if stripped and len(stripped.split()) == 1:
        return stripped
    if len(lines) != 1 or len(lines[0]) != 2:
        raise ValueError(f"{path}: want one line, TOKEN or NAME TOKEN (a client sends one token)")
    tok = lines[0][1]
    if len(tok) < _MIN_TOKEN or not re.fullmatch(r"[\x21-\x7e]+", tok):
        raise ValueError(f"{path}: the token must be at least {_MIN_TOKEN} printable ASCII characters")
    return tok


def default_socket_answers(path: str = DEFAULT_SOCKET_PATH) -> bool:
    """Whether something listens at the default socket (the CLI then uses
    it instead of starting an embedded supervisor)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(0.2)
    try:
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()
