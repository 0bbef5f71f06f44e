"""The blocking client: :func:`connect`, :class:`Client`, :class:`Sandbox`."""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import IO, Any, TypeVar

import grpc

from . import _config, errors
from ._embedded import DEFAULT_START_TIMEOUT, EmbeddedServer
from ._pb.execfarm.v1 import session_pb2 as spb
from ._pb.execfarm.v1 import session_pb2_grpc as sgrpc
from ._pb.prodisco.sandbox.v1 import sandbox_pb2 as pb
from ._pb.prodisco.sandbox.v1 import sandbox_pb2_grpc as pgrpc

__all__ = ["connect", "Client", "Sandbox", "Files", "RunResult", "ExecResult", "FileInfo", "parse_memory"]

_RUNTIMES = {"": pb.RUNTIME_UNSPECIFIED, "goja": pb.RUNTIME_GOJA, "node": pb.RUNTIME_NODE,
             "shell": pb.RUNTIME_SHELL, "python": pb.RUNTIME_PYTHON}
_UNITS = {"": 1, "k": 1000, "M": 1000**2, "G": 1000**3, "T": 1000**4,
          "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40}
# Upload chunks: PROTOCOL.md allows 1 MiB; 256 KiB is what the server sends.
CHUNK_BYTES = 256 << 10
# A collected result holds at most this much of a stream unless the call
# names its own output limit: the server's ceiling on max_output_bytes.
MAX_COLLECT_BYTES = 64 << 20

OutputCallback = Callable[[str], object]
T = TypeVar("T")


def parse_memory(v: str | int | None) -> int:
    """Bytes from ``256Mi``, ``1G``, ``1048576`` or an int; 0 for None."""
    if v is None:
        return 0
    if isinstance(v, int):
        if v < 0:
            raise ValueError(f"memory {v}: want 0 or more bytes")
        return v
    m = re.fullmatch(r"\s*(\d+)\s*([kMGT]i?|Ki)?\s*", v)
    if not m or (m.group(2) or "") not in _UNITS:
        raise ValueError(f"memory {v!r}: want bytes, or a number with Ki, Mi, Gi, Ti, k, M, G or T")
    return int(m.group(1)) * _UNITS[m.group(2) or ""]


def _runtime(name: str | None) -> int:
    try:
        return _RUNTIMES[(name or "").lower()]
    except KeyError:
        raise ValueError(f"runtime {name!r}: want goja, node, shell or python") from None


def _enum_name(value: int, enum: Any, prefix: str) -> str:
    return enum.Name(value).removeprefix(prefix).lower()


def _ms(seconds: float | None) -> int:
    return 0 if seconds is None else int(round(seconds * 1000))


def _limits(memory: str | int | None, timeout: float | None, cpus: float | None, pids: int | None,
            open_files: int | None, output_limit: int | None) -> pb.ResourceLimits | None:
    lim = pb.ResourceLimits(
        max_memory_bytes=parse_memory(memory), timeout_ms=_ms(timeout),
        max_cpu_percent=int(round((cpus or 0) * 100)), max_processes=pids or 0,
        max_file_descriptors=open_files or 0, max_output_bytes=output_limit or 0)
    return lim if lim.ByteSize() else None


@dataclass
class RunResult:
    """How an execution ended. ``stdout``/``stderr`` are the kept output as
    text (invalid UTF-8 as U+FFFD); ``state`` is ``completed``, ``failed``,
    ``cancelled`` or ``timeout``; ``termination_reason`` is ``exited``,
    ``timeout``, ``cpu_time``, ``memory``, ``pids``, ``output_limit``,
    ``cancelled``, ``signal`` or ``internal``; ``exit_code`` counts when it
    is ``exited``, ``signal`` when it is ``signal``. The truncation flags
    say the server (or the collection bound) dropped output."""

    execution_id: str
    exit_code: int
    stdout: str
    stderr: str
    state: str
    termination_reason: str
    signal: int = 0
    success: bool = False
    error: str | None = None
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    usage: pb.ResourceUsage | None = None
    effective_limits: pb.ResourceLimits | None = None


@dataclass
class ExecResult(RunResult):
    """A session exec's result: :class:`RunResult` and the raw bytes."""

    stdout_bytes: bytes = b""
    stderr_bytes: bytes = b""


@dataclass
class FileInfo:
    name: str
    path: str
    size: int
    type: str  # file, directory, symlink, other
    mode: int
    mod_time_ms: int
    link_target: str = ""


def _file_info(i: spb.FileInfo) -> FileInfo:
    return FileInfo(i.name, i.path, i.size, _enum_name(i.type, spb.FileType, "FILE_TYPE_"), i.mode,
                    i.mod_time_ms, i.link_target)


class _Collector:
    """Up to ``limit`` bytes of one output stream, and whether more came."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[bytes] = []
        self.size = 0
        self.cut = False

    def add(self, b: bytes) -> None:
        room = self.limit - self.size
        if len(b) > room:
            b, self.cut = b[:room], True
        if b:
            self.parts.append(b)
            self.size += len(b)

    def bytes(self) -> bytes:
        return b"".join(self.parts)


def _fill(cls: type[T], res: pb.ExecuteResult, exec_id: str, out: _Collector, err: _Collector,
          **extra: Any) -> T:
    o = res.outcome
    return cls(  # type: ignore[call-arg]
        execution_id=o.execution_id or exec_id, exit_code=o.exit_code,
        stdout=out.bytes().decode("utf-8", "replace"), stderr=err.bytes().decode("utf-8", "replace"),
        state=_enum_name(res.state, pb.ExecutionState, "EXECUTION_STATE_"),
        termination_reason=_enum_name(o.termination_reason, pb.TerminationReason, "TERMINATION_REASON_"),
        signal=o.signal, success=res.success, error=res.error if res.HasField("error") else None,
        stdout_truncated=o.stdout_truncated or out.cut, stderr_truncated=o.stderr_truncated or err.cut,
        usage=o.usage, effective_limits=o.effective_limits, **extra)


class Client:
    """A connection to one supervisor (and, in embedded mode, the
    supervisor itself). Use as a context manager, or call :meth:`close`.
    Thread-safe: calls may run concurrently from several threads."""

    def __init__(self, target: _config.Target, *, embedded: EmbeddedServer | None = None) -> None:
        self.address = target.address
        self.embedded = embedded
        self._md = (("authorization", "Bearer " + target.token),) if target.token else ()
        # Messages up to the server's 4 MiB + the 1 MiB pages it sends.
        self._channel = grpc.insecure_channel(target.target, options=[("grpc.max_receive_message_length", 16 << 20)])
        self._sandboxes = pgrpc.SandboxServiceStub(self._channel)
        self._sessions = sgrpc.SessionServiceStub(self._channel)

    # -- plumbing --------------------------------------------------------

    def _call(self, method: Callable[..., T], req: Any, **kw: Any) -> T:
        try:
            return method(req, metadata=self._md, **kw)
        except grpc.RpcError as e:
            raise errors.from_rpc(e, self.address) from None

    def _stream(self, method: Callable[..., Any], req: Any) -> Iterator[Any]:
        call = method(req, metadata=self._md)
        try:
            yield from call
        except grpc.RpcError as e:
            raise errors.from_rpc(e, self.address) from None
        finally:
            call.cancel()  # a no-op once the call ended; else the exec is cancelled

    # -- lifecycle -------------------------------------------------------

    def close(self) -> None:
        """Closes the connection; in embedded mode stops the supervisor
        (SIGTERM, then SIGKILL after its grace) and removes its files."""
        self._channel.close()
        if self.embedded is not None:
            self.embedded.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # -- single-use executions ----------------------------------------------

    def health(self) -> pb.HealthCheckResponse:
        """The supervisor's HealthCheck answer."""
        return self._call(self._sandboxes.HealthCheck, pb.HealthCheckRequest())

    def run(self, code: str, *, runtime: str | None = None, memory: str | int | None = None,
            timeout: float | None = None, cpus: float | None = None, pids: int | None = None,
            open_files: int | None = None, output_limit: int | None = None,
            env: Mapping[str, str] | None = None, stdin: bytes | str | None = None,
            on_stdout: OutputCallback | None = None, on_stderr: OutputCallback | None = None) -> RunResult:
        """Runs ``code`` in a fresh sandbox and returns how it ended.

        ``runtime``: goja, node, shell or python (None: the server's
        default). ``memory``: bytes, or ``"256Mi"``; ``timeout``: wall-clock
        seconds; ``cpus``: cores (0.5 = half of one); ``pids``: processes;
        ``open_files``: RLIMIT_NOFILE; ``output_limit``: bytes kept per
        stream. None: the server's default for each. ``on_stdout`` and
        ``on_stderr`` get each chunk of text as the program writes it; an
        exception they raise cancels the execution and propagates.
        Raises an :class:`~execfarm.errors.ExecfarmError` when the server
        refuses the request; a program that fails is a result, not an error."""
        req = pb.ExecuteRequest(code=code, runtime=_runtime(runtime), raw_output=True,
                                limits=_limits(memory, timeout, cpus, pids, open_files, output_limit),
                                stdin=stdin.encode() if isinstance(stdin, str) else (stdin or b""),
                                env=dict(env or {}))
        bound = output_limit or MAX_COLLECT_BYTES
        out, err = _Collector(bound), _Collector(bound)
        exec_id, result = "", None
        for chunk in self._stream(self._sandboxes.ExecuteStream, req):
            exec_id = exec_id or chunk.execution_id
            kind = chunk.WhichOneof("chunk")
            if kind == "output":
                out.add(chunk.output.encode())
                if on_stdout:
                    on_stdout(chunk.output)
            elif kind == "error_output":
                err.add(chunk.error_output.encode())
                if on_stderr:
                    on_stderr(chunk.error_output)
            elif kind == "result":
                result = chunk.result
        if result is None:
            raise errors.Internal("ExecuteStream ended without a result", reason="NO_RESULT")
        return _fill(RunResult, result, exec_id, out, err)

    # -- session sandboxes -------------------------------------------------

    def create_sandbox(self, *, runtime: str | None = None, ttl: float | None = None,
                       idle_timeout: float | None = None, labels: Mapping[str, str] | None = None,
                       profile: str = "", memory: str | int | None = None, timeout: float | None = None,
                       cpus: float | None = None, pids: int | None = None, open_files: int | None = None,
                       output_limit: int | None = None) -> Sandbox:
        """Creates a session sandbox and returns it once it is ready.
        ``ttl``: lifetime in seconds (None: the profile's or server's, 0: no
        expiry where the server allows it); ``idle_timeout``: seconds
        without activity before it expires (None: the profile's); limits as
        for :meth:`run`, over the whole sandbox (``timeout`` and
        ``output_limit`` are its execs' defaults). As a context manager it
        is deleted on exit."""
        req = spb.CreateSandboxRequest(runtime=_runtime(runtime), labels=dict(labels or {}), profile=profile,
                                       limits=_limits(memory, timeout, cpus, pids, open_files, output_limit))
        if ttl is not None:
            req.shutdown_after_seconds = int(ttl)
        if idle_timeout is not None:
            req.idle_timeout_seconds = int(idle_timeout)
        return Sandbox(self, self._call(self._sessions.CreateSandbox, req))

    def sandbox(self, sandbox_id: str) -> Sandbox:
        """Attaches to an existing sandbox of this caller.
        Raises :class:`~execfarm.errors.SandboxNotFound` when there is none."""
        sb = self._call(self._sessions.GetSandbox, spb.GetSandboxRequest(sandbox_id=sandbox_id))
        if sb.state == spb.SANDBOX_STATE_NOT_FOUND:
            raise errors.SandboxNotFound(sb.message or f"sandbox {sandbox_id} not found", code="NOT_FOUND",
                                         reason="SANDBOX_NOT_FOUND")
        return Sandbox(self, sb)

    def list_sandboxes(self, labels: Mapping[str, str] | None = None) -> list[Sandbox]:
        """This caller's sandboxes carrying every one of ``labels``, oldest first."""
        resp = self._call(self._sessions.ListSandboxes, spb.ListSandboxesRequest(labels=dict(labels or {})))
        return [Sandbox(self, s) for s in resp.sandboxes]


class Sandbox:
    """A session sandbox. ``id``, ``labels``, ``info`` (the last Sandbox
    status read). As a context manager, :meth:`delete` on exit."""

    def __init__(self, client: Client, info: spb.Sandbox) -> None:
        self._client = client
        self.id = info.sandbox_id
        self.info = info
        self.files = Files(self)

    @property
    def labels(self) -> dict[str, str]:
        return dict(self.info.labels)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        try:
            self.delete()
        except errors.NotFound:
            pass  # expired or deleted already

    def __repr__(self) -> str:
        return f"Sandbox({self.id!r})"

    def status(self) -> spb.Sandbox:
        """Reads the sandbox's status (state ``SANDBOX_STATE_NOT_FOUND`` once it is gone)."""
        self.info = self._client._call(self._client._sessions.GetSandbox, spb.GetSandboxRequest(sandbox_id=self.id))
        return self.info

    def delete(self) -> int:
        """Deletes the sandbox; returns how many execs it cancelled."""
        resp = self._client._call(self._client._sessions.DeleteSandbox, spb.DeleteSandboxRequest(sandbox_id=self.id))
        return resp.cancelled_execs

    def exec(self, command: str, *, runtime: str | None = None, cwd: str = "",
             env: Mapping[str, str] | None = None, stdin: bytes | str | None = None,
             timeout: float | None = None, output_limit: int | None = None,
             on_stdout: OutputCallback | None = None, on_stderr: OutputCallback | None = None) -> ExecResult:
        """Runs ``command`` (``/bin/sh -c`` for shell, else the program of
        ``runtime``; None: the sandbox's) in ``cwd`` (relative to
        /workspace) and returns how it ended. Callbacks get text as it is
        written (a character split between chunks is held until whole)."""
        req = spb.ExecRequest(sandbox_id=self.id, code=command, runtime=_runtime(runtime), workdir=cwd,
                              env=dict(env or {}),
                              stdin=stdin.encode() if isinstance(stdin, str) else (stdin or b""))
        if timeout is not None:
            req.timeout_ms = _ms(timeout)
        if output_limit is not None:
            req.max_output_bytes = output_limit
        bound = output_limit or MAX_COLLECT_BYTES
        out, err = _Collector(bound), _Collector(bound)
        dec_out, dec_err = codecs.getincrementaldecoder("utf-8")("replace"), codecs.getincrementaldecoder("utf-8")("replace")
        exec_id, result = "", None
        for chunk in self._client._stream(self._client._sessions.Exec, req):
            exec_id = exec_id or chunk.execution_id
            kind = chunk.WhichOneof("chunk")
            if kind == "stdout":
                out.add(chunk.stdout)
                if on_stdout and (text := dec_out.decode(chunk.stdout)):
                    on_stdout(text)
            elif kind == "stderr":
                err.add(chunk.stderr)
                if on_stderr and (text := dec_err.decode(chunk.stderr)):
                    on_stderr(text)
            elif kind == "result":
                result = chunk.result
        if result is None:
            raise errors.Internal("Exec ended without a result", reason="NO_RESULT")
        if on_stdout and (text := dec_out.decode(b"", final=True)):
            on_stdout(text)
        if on_stderr and (text := dec_err.decode(b"", final=True)):
            on_stderr(text)
        return _fill(ExecResult, result, exec_id, out, err, stdout_bytes=out.bytes(), stderr_bytes=err.bytes())


class Files:
    """A sandbox's files. Paths are absolute, or relative to /workspace.
    Content moves in chunks of :data:`CHUNK_BYTES`, never whole."""

    def __init__(self, sandbox: Sandbox) -> None:
        self._sb = sandbox

    def write(self, path: str, data: bytes | str | IO[bytes] | Iterable[bytes], *, mode: int = 0) -> int:
        """Writes ``data`` (bytes, text as UTF-8, a binary file object, or
        an iterable of bytes chunks) to ``path``, creating its parents;
        returns the bytes written. ``mode``: permission bits (0: 0644)."""
        def requests() -> Iterator[spb.UploadFileRequest]:
            yield spb.UploadFileRequest(header=spb.UploadFileHeader(sandbox_id=self._sb.id, path=path, mode=mode))
            if isinstance(data, str | bytes | bytearray | memoryview):
                b = memoryview(data.encode() if isinstance(data, str) else data)
                for i in range(0, len(b), CHUNK_BYTES):
                    yield spb.UploadFileRequest(data=bytes(b[i:i + CHUNK_BYTES]))
            elif hasattr(data, "read"):
                while chunk := data.read(CHUNK_BYTES):  # type: ignore[union-attr]
                    yield spb.UploadFileRequest(data=chunk)
            else:
                for chunk in data:  # type: ignore[union-attr]
                    for i in range(0, len(chunk), CHUNK_BYTES):
                        yield spb.UploadFileRequest(data=bytes(chunk[i:i + CHUNK_BYTES]))

        c = self._sb._client
        return c._call(c._sessions.UploadFile, requests()).bytes_written

    def iter_read(self, path: str) -> Iterator[bytes]:
        """The file's content as chunks, as they arrive."""
        c = self._sb._client
        for part in c._stream(c._sessions.DownloadFile, spb.DownloadFileRequest(sandbox_id=self._sb.id, path=path)):
            if part.WhichOneof("part") == "data":
                yield part.data

    def read(self, path: str) -> bytes:
        """The file's content (read in chunks; use :meth:`iter_read` or
        :meth:`download` for files that should not be held in memory)."""
        return b"".join(self.iter_read(path))

    def read_text(self, path: str, encoding: str = "utf-8") -> str:
        return self.read(path).decode(encoding)

    def download(self, path: str, out: IO[bytes]) -> int:
        """Copies the file into ``out`` chunk by chunk; returns its size."""
        n = 0
        for chunk in self.iter_read(path):
            out.write(chunk)
            n += len(chunk)
        return n

    def list(self, path: str = "", *, max_entries: int = 0) -> list[FileInfo]:
        c = self._sb._client
        resp = c._call(c._sessions.ListFiles, spb.ListFilesRequest(sandbox_id=self._sb.id, path=path, max_entries=max_entries))
        return [_file_info(e) for e in resp.entries]

    def stat(self, path: str) -> FileInfo | None:
        """The path's FileInfo (symlinks not followed), None if it does not exist."""
        c = self._sb._client
        resp = c._call(c._sessions.StatFile, spb.StatFileRequest(sandbox_id=self._sb.id, path=path))
        return _file_info(resp.info) if resp.exists else None

    def exists(self, path: str) -> bool:
        return self.stat(path) is not None

    def remove(self, path: str, *, recursive: bool = False) -> None:
        c = self._sb._client
        c._call(c._sessions.RemoveFile, spb.RemoveFileRequest(sandbox_id=self._sb.id, path=path, recursive=recursive))

    def mkdir(self, path: str, *, parents: bool = False, mode: int = 0) -> None:
        c = self._sb._client
        c._call(c._sessions.MakeDirectory,
                spb.MakeDirectoryRequest(sandbox_id=self._sb.id, path=path, parents=parents, mode=mode))


def connect(address: str | None = None, *, token: str | None = None, token_file: str | None = None,
            spawn: bool | None = None, binary: str | None = None,
            start_timeout: float = DEFAULT_START_TIMEOUT, serve_args: list[str] | None = None) -> Client:
    """Connects to a supervisor, as seed 002's SDK chooses: ``address``
    (``unix:/path`` or ``host:port``) or the environment
    (``SANDBOX_SOCKET_PATH``, ``SANDBOX_USE_TCP``, ``SANDBOX_TCP_HOST``,
    ``SANDBOX_TCP_PORT``; token from ``EXECFARM_TOKEN_FILE`` or
    ``EXECFARM_TOKEN``) → server mode; else a supervisor answering at the
    default socket; else embedded mode: an ``execfarm serve`` of its own
    (``binary``, else ``EXECFARM_BIN``, else ``bin/execfarm`` next to the
    package, else PATH), healthy within ``start_timeout`` seconds, stopped
    by :meth:`Client.close`. ``spawn=True`` forces embedded mode,
    ``spawn=False`` forbids it. Embedded mode needs root: without it,
    :class:`~execfarm.errors.EmbeddedUnavailable` says so."""
    if address is not None and spawn:
        raise ValueError("connect: an address and spawn=True conflict")
    if address is not None:
        tgt = address if address.startswith("unix:") or ":" in address else "unix:" + address
        tok = token if token is not None else _config._token({}, token_file) if token_file else ""
        return Client(_config.Target(tgt, tgt, True, tok))
    target = _config.from_env(token=token, token_file=token_file)
    if not spawn and (target.configured or spawn is False or _config.default_socket_answers()):
        return Client(target)
    emb = EmbeddedServer(binary, start_timeout=start_timeout, extra_args=serve_args)
    emb.start()
    return Client(_config.Target(emb.target, "unix://" + emb.socket, True, emb.token), embedded=emb)
