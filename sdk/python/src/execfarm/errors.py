"""The errors execfarm raises: one class per gRPC code, and a subclass per
ErrorInfo reason a caller is likely to branch on (proto/PROTOCOL.md,
"Errors"). Every one keeps the server's message, its code, its reason
and, where the server sent them, the field at fault (BadRequest) and the
retry delay (RetryInfo). They are mapped in one place, :func:`from_rpc`.
"""

from __future__ import annotations

from typing import Any

import grpc

__all__ = [
    "ExecfarmError",
    "Cancelled",
    "InvalidArgument",
    "DeadlineExceeded",
    "NotFound",
    "AlreadyExists",
    "PermissionDenied",
    "ResourceExhausted",
    "FailedPrecondition",
    "Aborted",
    "OutOfRange",
    "Unimplemented",
    "Internal",
    "Unavailable",
    "Unauthenticated",
    "Unknown",
    "Unreachable",
    "EmbeddedUnavailable",
    "ExecutionNotFound",
    "SandboxNotFound",
    "FileNotFound",
    "CachedScriptNotFound",
    "SandboxNotReady",
    "QueueFull",
    "QuotaExceeded",
    "WorkspaceFull",
    "MemoryBudget",
    "ShuttingDown",
    "RuntimeUnavailable",
    "from_rpc",
]


class ExecfarmError(Exception):
    """A failed call. ``code`` is the gRPC status code's name
    (``"NOT_FOUND"``), ``reason`` the ErrorInfo reason (``"SANDBOX_NOT_FOUND"``;
    ``""`` when the server sent none, as for a connection that failed),
    ``message`` the server's message, ``field`` the request field at fault
    of an INVALID_ARGUMENT (``"limits.max_memory_bytes"``; ``""`` if none),
    ``retry_delay`` the seconds after which the same request may succeed
    (RetryInfo; ``None`` if none), ``metadata`` the ErrorInfo metadata."""

    code: str = "UNKNOWN"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        reason: str = "",
        field: str = "",
        retry_delay: float | None = None,
        metadata: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.reason = reason
        self.field = field
        self.retry_delay = retry_delay
        self.metadata = dict(metadata or {})

    def __str__(self) -> str:
        head = self.code + (f" {self.reason}" if self.reason else "")
        return f"{head}: {self.message}"


class Cancelled(ExecfarmError):
    code = "CANCELLED"


class Unknown(ExecfarmError):
    code = "UNKNOWN"


class InvalidArgument(ExecfarmError):
    code = "INVALID_ARGUMENT"


class DeadlineExceeded(ExecfarmError):
    code = "DEADLINE_EXCEEDED"


class NotFound(ExecfarmError):
    code = "NOT_FOUND"


class AlreadyExists(ExecfarmError):
    code = "ALREADY_EXISTS"


class PermissionDenied(ExecfarmError):
    code = "PERMISSION_DENIED"


class ResourceExhausted(ExecfarmError):
    code = "RESOURCE_EXHAUSTED"


class FailedPrecondition(ExecfarmError):
    code = "FAILED_PRECONDITION"


class Aborted(ExecfarmError):
    code = "ABORTED"


class OutOfRange(ExecfarmError):
    code = "OUT_OF_RANGE"


class Unimplemented(ExecfarmError):
    code = "UNIMPLEMENTED"


class Internal(ExecfarmError):
    code = "INTERNAL"


class Unavailable(ExecfarmError):
    code = "UNAVAILABLE"


class Unauthenticated(ExecfarmError):
    code = "UNAUTHENTICATED"


class Unreachable(Unavailable):
    """No supervisor answered at the address (UNAVAILABLE without a reason:
    the connection failed, the server did not refuse)."""


class EmbeddedUnavailable(ExecfarmError):
    """The embedded supervisor could not start: not root, no execfarm
    binary, or ``execfarm serve`` refused the host. The message says what
    is missing and how to point at a running server instead."""

    code = "FAILED_PRECONDITION"


class ExecutionNotFound(NotFound):
    pass


class SandboxNotFound(NotFound):
    pass


class FileNotFound(NotFound):
    pass


class CachedScriptNotFound(NotFound):
    pass


class SandboxNotReady(FailedPrecondition):
    pass


class QueueFull(ResourceExhausted):
    pass


class QuotaExceeded(ResourceExhausted):
    pass


class WorkspaceFull(ResourceExhausted):
    pass


class MemoryBudget(ResourceExhausted):
    pass


class ShuttingDown(Unavailable):
    pass


class RuntimeUnavailable(Unimplemented):
    pass


_BY_CODE: dict[grpc.StatusCode, type[ExecfarmError]] = {
    grpc.StatusCode.CANCELLED: Cancelled,
    grpc.StatusCode.UNKNOWN: Unknown,
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceeded,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExists,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    grpc.StatusCode.ABORTED: Aborted,
    grpc.StatusCode.OUT_OF_RANGE: OutOfRange,
    grpc.StatusCode.UNIMPLEMENTED: Unimplemented,
    grpc.StatusCode.INTERNAL: Internal,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.DATA_LOSS: Internal,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
}

_BY_REASON: dict[str, type[ExecfarmError]] = {
    "EXECUTION_NOT_FOUND": ExecutionNotFound,
    "SANDBOX_NOT_FOUND": SandboxNotFound,
    "FILE_NOT_FOUND": FileNotFound,
    "CACHED_SCRIPT_NOT_FOUND": CachedScriptNotFound,
    "SANDBOX_NOT_READY": SandboxNotReady,
    "QUEUE_FULL": QueueFull,
    "QUOTA_EXCEEDED": QuotaExceeded,
    "WORKSPACE_FULL": WorkspaceFull,
    "MEMORY_BUDGET": MemoryBudget,
    "SHUTTING_DOWN": ShuttingDown,
    "RUNTIME_UNAVAILABLE": RuntimeUnavailable,
}

_ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
_BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"
_RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"


def from_rpc(err: grpc.RpcError, address: str = "") -> ExecfarmError:
    """The ExecfarmError for a failed call: the class of its ErrorInfo
    reason if it has one here, else of its gRPC code. An UNAVAILABLE
    without a reason is :class:`Unreachable`, naming ``address``."""
    code: grpc.StatusCode = err.code()  # type: ignore[attr-defined]
    message: str = err.details() or ""  # type: ignore[attr-defined]
    reason, field, delay, meta = "", "", None, {}
    for key, value in err.trailing_metadata() or ():  # type: ignore[attr-defined]
        if key == "grpc-status-details-bin" and isinstance(value, bytes):
            reason, field, delay, meta = _details(value)
    cls = _BY_REASON.get(reason) or _BY_CODE.get(code, Unknown)
    if code == grpc.StatusCode.UNAVAILABLE and not reason:
        cls = Unreachable
        if address:
            message = f"no execfarm supervisor answered at {address}: {message}"
    return cls(message, code=code.name, reason=reason, field=field, retry_delay=delay, metadata=meta)


def _details(status: bytes) -> tuple[str, str, float | None, dict[str, str]]:
    """Reads google.rpc.Status.details (ErrorInfo, BadRequest, RetryInfo)
    from the status's wire bytes. Decoded by hand so that the package needs
    no googleapis-common-protos, and registers no google.rpc names that
    would clash with it."""
    reason, field, delay, meta = "", "", None, {}
    try:
        for num, val in _fields(status):
            if num != 3 or not isinstance(val, bytes):
                continue
            any_ = dict(_fields(val))
            url, body = any_.get(1, b""), any_.get(2, b"")
            if not isinstance(url, bytes) or not isinstance(body, bytes):
                continue
            kind = url.decode("utf-8", "replace")
            if kind == _ERROR_INFO:
                for n, v in _fields(body):
                    if n == 1 and isinstance(v, bytes):
                        reason = v.decode("utf-8", "replace")
                    elif n == 3 and isinstance(v, bytes):
                        entry = dict(_fields(v))
                        k, x = entry.get(1, b""), entry.get(2, b"")
                        if isinstance(k, bytes) and isinstance(x, bytes):
                            meta[k.decode("utf-8", "replace")] = x.decode("utf-8", "replace")
            elif kind == _BAD_REQUEST:
                for n, v in _fields(body):
                    if n == 1 and isinstance(v, bytes) and not field:
                        f = dict(_fields(v)).get(1, b"")
                        if isinstance(f, bytes):
                            field = f.decode("utf-8", "replace")
            elif kind == _RETRY_INFO:
                d = dict(_fields(body)).get(1, b"")
                if isinstance(d, bytes):
                    dur = dict(_fields(d))
                    secs, nanos = dur.get(1, 0), dur.get(2, 0)
                    if isinstance(secs, int) and isinstance(nanos, int):
                        delay = secs + nanos / 1e9
    except ValueError:
        pass  # a malformed status keeps what was read
    return reason, field, delay, meta


def _fields(b: bytes) -> list[tuple[int, Any]]:
    """The fields of one protobuf message's wire bytes: (number, int) for
    varints, (number, bytes) for length-delimited fields; fixed-width
    fields are skipped. ValueError on truncated input."""
    out: list[tuple[int, Any]] = []
    i = 0

    def varint() -> int:
        nonlocal i
        shift, v = 0, 0
        while True:
            if i >= len(b) or shift > 63:
                raise ValueError("truncated varint")
            c = b[i]
            i += 1
            v |= (c & 0x7F) << shift
            if c < 0x80:
                return v
            shift += 7

    while i < len(b):
        key = varint()
        num, wire = key >> 3, key & 7
        if wire == 0:
            out.append((num, varint()))
        elif wire == 2:
            n = varint()
            if i + n > len(b):
                raise ValueError("truncated field")
            out.append((num, b[i : i + n]))
            i += n
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            raise ValueError(f"wire type {wire}")
    return out
