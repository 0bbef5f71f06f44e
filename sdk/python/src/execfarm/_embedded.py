"""The embedded supervisor: an ``execfarm serve`` child process on a private
unix socket, started by :func:`execfarm.connect` when no server is
configured (seed 002's embedded mode).

Its resources are its own, so that it never shares them with another
supervisor on the host: a fresh directory
``/tmp/execfarm-embedded-<pid>-XXXX`` (0711: sandbox workers pass through
it) holding the socket, the sandboxes' state, the script cache, the token
file and serve's log; the cgroup parent ``/execfarm-embedded-<pid>-XXXX``
(under this process's cgroup); and the first uid window of the embedded
windows that ``serve`` could lock (the windows the Go CLI's embedded
supervisor chooses from, ``supervisor/host.EmbeddedUIDBase``). The names
carry this process's pid, so that an embedded supervisor of the CLI
removes what a killed Python process left (``host.RemoveStaleEmbedded``).
"""

from __future__ import annotations

import atexit
import ctypes
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import weakref
from pathlib import Path

import grpc

from . import errors
from ._pb.prodisco.sandbox.v1 import sandbox_pb2 as pb

# supervisor/host: EmbeddedWindows windows of probe.DefaultUIDSlots ranges
# of probe.DefaultUIDRangeSize uids, from DefaultUIDBase on (window 0 is
# serve's default).
_UID_BASE = 1 << 30
_UID_SLOTS = 64
_UID_RANGE = 65536
_WINDOWS = 255
# serve reserves max-concurrent + warm-pool + max-sandboxes + 8 uid ranges
# (cmd/execfarm uidSlots); they must fit the window's 64.
_MAX_SANDBOXES = 16
_MAX_CONCURRENT_CAP = _UID_SLOTS - _MAX_SANDBOXES - 8
_SHARED = "another execfarm serve uses the same resources"
_PR_SET_PDEATHSIG = 1

DEFAULT_START_TIMEOUT = 15.0
DEFAULT_STOP_GRACE = 5.0


def embedded_uid_base(pid: int) -> int:
    """The first uid of window 1 + pid % 255 (host.EmbeddedUIDBase)."""
    return _UID_BASE + (1 + pid % _WINDOWS) * _UID_SLOTS * _UID_RANGE


def find_binary(explicit: str | None = None) -> str:
    """The execfarm binary: ``explicit``, else ``$EXECFARM_BIN``, else
    ``bin/execfarm`` next to this package, else ``execfarm`` on PATH."""
    for cand in (explicit, os.environ.get("EXECFARM_BIN")):
        if cand:
            if not os.access(cand, os.X_OK):
                raise errors.EmbeddedUnavailable(f"execfarm binary {cand} is not an executable file")
            return cand
    beside = Path(__file__).resolve().parent / "bin" / "execfarm"
    if os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("execfarm")
    if found:
        return found
    raise errors.EmbeddedUnavailable(
        "no execfarm binary for the embedded supervisor: set EXECFARM_BIN, or put execfarm on PATH; "
        "or point at a running server with SANDBOX_SOCKET_PATH (or SANDBOX_TCP_HOST / SANDBOX_TCP_PORT)"
    )


def _set_pdeathsig() -> None:
    """In the child before exec: SIGTERM when the parent dies, so that
    serve shuts down and cleans up even when this process is killed with
    SIGKILL; and if the parent is already gone, do not start at all."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() == 1:
        os._exit(1)


class EmbeddedServer:
    """One ``execfarm serve`` child. :meth:`start` returns once it answers
    HealthCheck healthy; :meth:`close` stops it (SIGTERM, then SIGKILL
    after ``stop_grace`` seconds) and removes its directory."""

    def __init__(
        self,
        binary: str | None = None,
        *,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        stop_grace: float = DEFAULT_STOP_GRACE,
        extra_args: list[str] | None = None,
    ) -> None:
        self.binary = binary
        self.start_timeout = start_timeout
        self.stop_grace = stop_grace
        self.extra_args = list(extra_args or [])
        self.dir = ""
        self.socket = ""
        self.token = ""
        self.cgroup_parent = ""
        self.uid_base = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._closed = False

    @property
    def target(self) -> str:
        return "unix:" + self.socket

    def start(self) -> None:
        if os.geteuid() != 0:
            raise errors.EmbeddedUnavailable(
                "the embedded supervisor (execfarm serve) needs root: it makes user namespaces, cgroups and "
                "uid mappings for its sandboxes. Run as root, or point at a running server: "
                "SANDBOX_SOCKET_PATH=/run/execfarm/execfarm.sock (or SANDBOX_TCP_HOST / SANDBOX_TCP_PORT), "
                "with EXECFARM_TOKEN_FILE if it requires a token"
            )
        binary = find_binary(self.binary)
        pid = os.getpid()
        self.dir = tempfile.mkdtemp(prefix=f"execfarm-embedded-{pid}-", dir="/tmp")
        try:
            os.chmod(self.dir, 0o711)
            self.socket = os.path.join(self.dir, "execfarm.sock")
            self.cgroup_parent = "/" + os.path.basename(self.dir)
            self.token = secrets.token_hex(24)
            token_file = os.path.join(self.dir, "token")
            fd = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(self.token + "\n")
            deadline = time.monotonic() + self.start_timeout
            for i in range(_WINDOWS):
                self.uid_base = embedded_uid_base(pid + i)
                if self._try_start(binary, token_file, deadline):
                    break
            else:
                raise errors.EmbeddedUnavailable("every embedded uid window is held by another supervisor")
        except BaseException:
            self.close()
            raise
        _live.add(self)

    def _try_start(self, binary: str, token_file: str, deadline: float) -> bool:
        """Starts serve with self.uid_base and waits until it is healthy:
        True; False when that window is another supervisor's (serve exited
        saying so)."""
        cpus = os.cpu_count() or 1
        args = [
            binary, "serve",
            "--socket", self.socket,
            "--token-file", token_file,
            "--state-dir", os.path.join(self.dir, "state"),
            "--scripts-cache-dir", os.path.join(self.dir, "cache"),
            "--cgroup-parent", self.cgroup_parent,
            "--uid-base", str(self.uid_base),
            "--max-concurrent", str(min(cpus, _MAX_CONCURRENT_CAP)),
            "--max-sandboxes", str(_MAX_SANDBOXES),
            "--grace", "2s",
            "--log-level", "warn",
            *self.extra_args,
        ]
        log_path = os.path.join(self.dir, "serve.log")
        # A file, not a pipe: a serve whose parent died must still be able
        # to log while it cleans up (a write to a broken pipe on fd 2 would
        # kill it with SIGPIPE).
        with open(log_path, "wb") as log:
            self.proc = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                start_new_session=True, preexec_fn=_set_pdeathsig, close_fds=True,
            )
        # Reconnect quickly while the socket does not exist yet.
        opts = [("grpc.initial_reconnect_backoff_ms", 20), ("grpc.min_reconnect_backoff_ms", 20),
                ("grpc.max_reconnect_backoff_ms", 100)]
        with grpc.insecure_channel(self.target, options=opts) as ch:
            ready = grpc.channel_ready_future(ch)
            while True:
                if self.proc.poll() is not None:
                    ready.cancel()
                    text = self.log_tail()
                    self.proc = None
                    if _SHARED in text and "uid window" in text:
                        return False
                    raise errors.EmbeddedUnavailable(f"execfarm serve exited at start-up: {text.strip()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    ready.cancel()
                    self._stop_process()
                    raise errors.EmbeddedUnavailable(
                        f"execfarm serve was not healthy within {self.start_timeout:g} s: {self.log_tail().strip()}")
                try:
                    ready.result(timeout=min(left, 0.2))
                    break
                except grpc.FutureTimeoutError:
                    continue
            health = ch.unary_unary(
                "/prodisco.sandbox.v1.SandboxService/HealthCheck",
                request_serializer=pb.HealthCheckRequest.SerializeToString,
                response_deserializer=pb.HealthCheckResponse.FromString,
            )
            try:
                resp = health(pb.HealthCheckRequest(), timeout=max(deadline - time.monotonic(), 0.1),
                              metadata=[("authorization", "Bearer " + self.token)])
            except grpc.RpcError as e:
                self._stop_process()
                raise errors.EmbeddedUnavailable(f"execfarm serve did not answer HealthCheck: {e.details()}") from None
            if not resp.healthy:
                self._stop_process()
                raise errors.EmbeddedUnavailable(f"execfarm serve is not healthy: {resp.unhealthy_reason}")
        return True

    def log_tail(self, limit: int = 4096) -> str:
        """The last ``limit`` bytes of serve's log."""
        try:
            with open(os.path.join(self.dir, "serve.log"), "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(f.tell() - limit, 0))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def _stop_process(self) -> None:
        p = self.proc
        if p is None:
            return
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(self.stop_grace)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.proc = None

    def close(self) -> None:
        """Stops serve and removes its directory. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        try:
            self._stop_process()
        finally:
            if self.dir:
                shutil.rmtree(self.dir, ignore_errors=True)
            _live.discard(self)


_live: weakref.WeakSet[EmbeddedServer] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for s in list(_live):
        s.close()
