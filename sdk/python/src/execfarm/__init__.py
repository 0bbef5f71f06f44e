"""execfarm: run code in process-isolated sandboxes from Python.

``execfarm.connect()`` returns a :class:`Client` of a configured server,
or of an embedded ``execfarm serve`` it starts (README, "Using it from
code"). Errors are :mod:`execfarm.errors` classes.
"""

from . import errors
from ._client import (
    Client,
    ExecResult,
    FileInfo,
    Files,
    RunResult,
    Sandbox,
    connect,
    parse_memory,
)
from .errors import ExecfarmError

__all__ = [
    "connect",
    "Client",
    "Sandbox",
    "Files",
    "RunResult",
    "ExecResult",
    "FileInfo",
    "ExecfarmError",
    "errors",
    "parse_memory",
]
__version__ = "0.1.0"
