from execfarm._pb.prodisco.sandbox.v1 import sandbox_pb2 as _sandbox_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
END_REASON_DELETED: EndReason
END_REASON_EXPIRED: EndReason
END_REASON_FAILED: EndReason
END_REASON_IDLE: EndReason
END_REASON_SHUTDOWN: EndReason
END_REASON_UNSPECIFIED: EndReason
FILE_TYPE_DIRECTORY: FileType
FILE_TYPE_FILE: FileType
FILE_TYPE_OTHER: FileType
FILE_TYPE_SYMLINK: FileType
FILE_TYPE_UNSPECIFIED: FileType
OUTPUT_STREAM_STDERR: OutputStream
OUTPUT_STREAM_STDOUT: OutputStream
OUTPUT_STREAM_UNSPECIFIED: OutputStream
SANDBOX_STATE_NOT_FOUND: SandboxState
SANDBOX_STATE_NOT_READY: SandboxState
SANDBOX_STATE_READY: SandboxState
SANDBOX_STATE_UNSPECIFIED: SandboxState

class CreateSandboxRequest(_message.Message):
    __slots__ = ["idle_timeout_seconds", "labels", "limits", "profile", "runtime", "shutdown_after_seconds"]
    class LabelsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    IDLE_TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_FIELD_NUMBER: _ClassVar[int]
    SHUTDOWN_AFTER_SECONDS_FIELD_NUMBER: _ClassVar[int]
    idle_timeout_seconds: int
    labels: _containers.ScalarMap[str, str]
    limits: _sandbox_pb2.ResourceLimits
    profile: str
    runtime: _sandbox_pb2.Runtime
    shutdown_after_seconds: int
    def __init__(self, runtime: _Optional[_Union[_sandbox_pb2.Runtime, str]] = ..., limits: _Optional[_Union[_sandbox_pb2.ResourceLimits, _Mapping]] = ..., labels: _Optional[_Mapping[str, str]] = ..., shutdown_after_seconds: _Optional[int] = ..., idle_timeout_seconds: _Optional[int] = ..., profile: _Optional[str] = ...) -> None: ...

class DeleteSandboxRequest(_message.Message):
    __slots__ = ["sandbox_id"]
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    def __init__(self, sandbox_id: _Optional[str] = ...) -> None: ...

class DeleteSandboxResponse(_message.Message):
    __slots__ = ["cancelled_execs"]
    CANCELLED_EXECS_FIELD_NUMBER: _ClassVar[int]
    cancelled_execs: int
    def __init__(self, cancelled_execs: _Optional[int] = ...) -> None: ...

class DirectoryMadeEvent(_message.Message):
    __slots__ = ["path"]
    PATH_FIELD_NUMBER: _ClassVar[int]
    path: str
    def __init__(self, path: _Optional[str] = ...) -> None: ...

class DownloadFileRequest(_message.Message):
    __slots__ = ["path", "sandbox_id"]
    PATH_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    path: str
    sandbox_id: str
    def __init__(self, sandbox_id: _Optional[str] = ..., path: _Optional[str] = ...) -> None: ...

class DownloadFileResponse(_message.Message):
    __slots__ = ["data", "info"]
    DATA_FIELD_NUMBER: _ClassVar[int]
    INFO_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    info: FileInfo
    def __init__(self, info: _Optional[_Union[FileInfo, _Mapping]] = ..., data: _Optional[bytes] = ...) -> None: ...

class ExecChunk(_message.Message):
    __slots__ = ["execution_id", "result", "started", "stderr", "stdout", "stream_offset", "timestamp_ms"]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    STARTED_FIELD_NUMBER: _ClassVar[int]
    STDERR_FIELD_NUMBER: _ClassVar[int]
    STDOUT_FIELD_NUMBER: _ClassVar[int]
    STREAM_OFFSET_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    execution_id: str
    result: _sandbox_pb2.ExecuteResult
    started: ExecStarted
    stderr: bytes
    stdout: bytes
    stream_offset: int
    timestamp_ms: int
    def __init__(self, execution_id: _Optional[str] = ..., started: _Optional[_Union[ExecStarted, _Mapping]] = ..., stdout: _Optional[bytes] = ..., stderr: _Optional[bytes] = ..., result: _Optional[_Union[_sandbox_pb2.ExecuteResult, _Mapping]] = ..., stream_offset: _Optional[int] = ..., timestamp_ms: _Optional[int] = ...) -> None: ...

class ExecEndedEvent(_message.Message):
    __slots__ = ["execution_id", "result"]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    execution_id: str
    result: _sandbox_pb2.ExecuteResult
    def __init__(self, execution_id: _Optional[str] = ..., result: _Optional[_Union[_sandbox_pb2.ExecuteResult, _Mapping]] = ...) -> None: ...

class ExecOutputEvent(_message.Message):
    __slots__ = ["data", "execution_id", "stream", "stream_offset"]
    DATA_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    STREAM_OFFSET_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    execution_id: str
    stream: OutputStream
    stream_offset: int
    def __init__(self, execution_id: _Optional[str] = ..., stream: _Optional[_Union[OutputStream, str]] = ..., data: _Optional[bytes] = ..., stream_offset: _Optional[int] = ...) -> None: ...

class ExecRequest(_message.Message):
    __slots__ = ["argv", "code", "cpu_time_ms", "env", "keep_stdin_open", "max_output_bytes", "runtime", "sandbox_id", "stdin", "timeout_ms", "workdir"]
    class EnvEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ARGV_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    CPU_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    KEEP_STDIN_OPEN_FIELD_NUMBER: _ClassVar[int]
    MAX_OUTPUT_BYTES_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    STDIN_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    WORKDIR_FIELD_NUMBER: _ClassVar[int]
    argv: _containers.RepeatedScalarFieldContainer[str]
    code: str
    cpu_time_ms: int
    env: _containers.ScalarMap[str, str]
    keep_stdin_open: bool
    max_output_bytes: int
    runtime: _sandbox_pb2.Runtime
    sandbox_id: str
    stdin: bytes
    timeout_ms: int
    workdir: str
    def __init__(self, sandbox_id: _Optional[str] = ..., code: _Optional[str] = ..., runtime: _Optional[_Union[_sandbox_pb2.Runtime, str]] = ..., stdin: _Optional[bytes] = ..., keep_stdin_open: bool = ..., env: _Optional[_Mapping[str, str]] = ..., workdir: _Optional[str] = ..., timeout_ms: _Optional[int] = ..., max_output_bytes: _Optional[int] = ..., cpu_time_ms: _Optional[int] = ..., argv: _Optional[_Iterable[str]] = ...) -> None: ...

class ExecStarted(_message.Message):
    __slots__ = ["queue_position", "sandbox_id", "state"]
    QUEUE_POSITION_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    queue_position: int
    sandbox_id: str
    state: _sandbox_pb2.ExecutionState
    def __init__(self, sandbox_id: _Optional[str] = ..., state: _Optional[_Union[_sandbox_pb2.ExecutionState, str]] = ..., queue_position: _Optional[int] = ...) -> None: ...

class ExecStartedEvent(_message.Message):
    __slots__ = ["code_preview", "execution_id", "runtime", "workdir"]
    CODE_PREVIEW_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_FIELD_NUMBER: _ClassVar[int]
    WORKDIR_FIELD_NUMBER: _ClassVar[int]
    code_preview: str
    execution_id: str
    runtime: _sandbox_pb2.Runtime
    workdir: str
    def __init__(self, execution_id: _Optional[str] = ..., runtime: _Optional[_Union[_sandbox_pb2.Runtime, str]] = ..., code_preview: _Optional[str] = ..., workdir: _Optional[str] = ...) -> None: ...

class ExtendSandboxRequest(_message.Message):
    __slots__ = ["sandbox_id", "ttl_seconds"]
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    TTL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    ttl_seconds: int
    def __init__(self, sandbox_id: _Optional[str] = ..., ttl_seconds: _Optional[int] = ...) -> None: ...

class FileInfo(_message.Message):
    __slots__ = ["link_target", "mod_time_ms", "mode", "name", "not_utf8", "path", "size", "type"]
    LINK_TARGET_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    MOD_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NOT_UTF8_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    link_target: str
    mod_time_ms: int
    mode: int
    name: str
    not_utf8: bool
    path: str
    size: int
    type: FileType
    def __init__(self, name: _Optional[str] = ..., path: _Optional[str] = ..., size: _Optional[int] = ..., type: _Optional[_Union[FileType, str]] = ..., mode: _Optional[int] = ..., mod_time_ms: _Optional[int] = ..., link_target: _Optional[str] = ..., not_utf8: bool = ...) -> None: ...

class FileMovedEvent(_message.Message):
    __slots__ = ["destination", "source"]
    DESTINATION_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    destination: str
    source: str
    def __init__(self, source: _Optional[str] = ..., destination: _Optional[str] = ...) -> None: ...

class FileRemovedEvent(_message.Message):
    __slots__ = ["path"]
    PATH_FIELD_NUMBER: _ClassVar[int]
    path: str
    def __init__(self, path: _Optional[str] = ...) -> None: ...

class FileWrittenEvent(_message.Message):
    __slots__ = ["path", "size"]
    PATH_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    path: str
    size: int
    def __init__(self, path: _Optional[str] = ..., size: _Optional[int] = ...) -> None: ...

class GetSandboxRequest(_message.Message):
    __slots__ = ["sandbox_id"]
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    def __init__(self, sandbox_id: _Optional[str] = ...) -> None: ...

class ListFilesRequest(_message.Message):
    __slots__ = ["max_entries", "path", "sandbox_id"]
    MAX_ENTRIES_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    max_entries: int
    path: str
    sandbox_id: str
    def __init__(self, sandbox_id: _Optional[str] = ..., path: _Optional[str] = ..., max_entries: _Optional[int] = ...) -> None: ...

class ListFilesResponse(_message.Message):
    __slots__ = ["entries", "path", "total_entries", "truncated"]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    TOTAL_ENTRIES_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[FileInfo]
    path: str
    total_entries: int
    truncated: bool
    def __init__(self, path: _Optional[str] = ..., entries: _Optional[_Iterable[_Union[FileInfo, _Mapping]]] = ..., total_entries: _Optional[int] = ..., truncated: bool = ...) -> None: ...

class ListSandboxesRequest(_message.Message):
    __slots__ = ["labels"]
    class LabelsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    LABELS_FIELD_NUMBER: _ClassVar[int]
    labels: _containers.ScalarMap[str, str]
    def __init__(self, labels: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ListSandboxesResponse(_message.Message):
    __slots__ = ["sandboxes"]
    SANDBOXES_FIELD_NUMBER: _ClassVar[int]
    sandboxes: _containers.RepeatedCompositeFieldContainer[Sandbox]
    def __init__(self, sandboxes: _Optional[_Iterable[_Union[Sandbox, _Mapping]]] = ...) -> None: ...

class MakeDirectoryRequest(_message.Message):
    __slots__ = ["mode", "parents", "path", "sandbox_id"]
    MODE_FIELD_NUMBER: _ClassVar[int]
    PARENTS_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    mode: int
    parents: bool
    path: str
    sandbox_id: str
    def __init__(self, sandbox_id: _Optional[str] = ..., path: _Optional[str] = ..., mode: _Optional[int] = ..., parents: bool = ...) -> None: ...

class MakeDirectoryResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class MoveFileRequest(_message.Message):
    __slots__ = ["destination", "overwrite", "sandbox_id", "source"]
    DESTINATION_FIELD_NUMBER: _ClassVar[int]
    OVERWRITE_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    destination: str
    overwrite: bool
    sandbox_id: str
    source: str
    def __init__(self, sandbox_id: _Optional[str] = ..., source: _Optional[str] = ..., destination: _Optional[str] = ..., overwrite: bool = ...) -> None: ...

class MoveFileResponse(_message.Message):
    __slots__ = ["destination", "source"]
    DESTINATION_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    destination: str
    source: str
    def __init__(self, source: _Optional[str] = ..., destination: _Optional[str] = ...) -> None: ...

class ReadEventsRequest(_message.Message):
    __slots__ = ["from_offset", "max_events", "sandbox_id"]
    FROM_OFFSET_FIELD_NUMBER: _ClassVar[int]
    MAX_EVENTS_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    from_offset: int
    max_events: int
    sandbox_id: str
    def __init__(self, sandbox_id: _Optional[str] = ..., from_offset: _Optional[int] = ..., max_events: _Optional[int] = ...) -> None: ...

class ReadEventsResponse(_message.Message):
    __slots__ = ["ended", "events", "first_offset", "next_offset"]
    ENDED_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    FIRST_OFFSET_FIELD_NUMBER: _ClassVar[int]
    NEXT_OFFSET_FIELD_NUMBER: _ClassVar[int]
    ended: bool
    events: _containers.RepeatedCompositeFieldContainer[SandboxEvent]
    first_offset: int
    next_offset: int
    def __init__(self, events: _Optional[_Iterable[_Union[SandboxEvent, _Mapping]]] = ..., next_offset: _Optional[int] = ..., first_offset: _Optional[int] = ..., ended: bool = ...) -> None: ...

class RemoveFileRequest(_message.Message):
    __slots__ = ["path", "recursive", "sandbox_id"]
    PATH_FIELD_NUMBER: _ClassVar[int]
    RECURSIVE_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    path: str
    recursive: bool
    sandbox_id: str
    def __init__(self, sandbox_id: _Optional[str] = ..., path: _Optional[str] = ..., recursive: bool = ...) -> None: ...

class RemoveFileResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class Sandbox(_message.Message):
    __slots__ = ["created_at_ms", "expires_at_ms", "first_event_offset", "idle_timeout_seconds", "labels", "last_activity_ms", "limits", "message", "next_event_offset", "owner", "profile", "ready", "running_execs", "runtime", "sandbox_id", "state", "usage"]
    class LabelsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CREATED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_MS_FIELD_NUMBER: _ClassVar[int]
    FIRST_EVENT_OFFSET_FIELD_NUMBER: _ClassVar[int]
    IDLE_TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    LAST_ACTIVITY_MS_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    NEXT_EVENT_OFFSET_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    READY_FIELD_NUMBER: _ClassVar[int]
    RUNNING_EXECS_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    created_at_ms: int
    expires_at_ms: int
    first_event_offset: int
    idle_timeout_seconds: int
    labels: _containers.ScalarMap[str, str]
    last_activity_ms: int
    limits: _sandbox_pb2.ResourceLimits
    message: str
    next_event_offset: int
    owner: str
    profile: str
    ready: bool
    running_execs: int
    runtime: _sandbox_pb2.Runtime
    sandbox_id: str
    state: SandboxState
    usage: _sandbox_pb2.ResourceUsage
    def __init__(self, sandbox_id: _Optional[str] = ..., state: _Optional[_Union[SandboxState, str]] = ..., ready: bool = ..., message: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., runtime: _Optional[_Union[_sandbox_pb2.Runtime, str]] = ..., limits: _Optional[_Union[_sandbox_pb2.ResourceLimits, _Mapping]] = ..., created_at_ms: _Optional[int] = ..., expires_at_ms: _Optional[int] = ..., idle_timeout_seconds: _Optional[int] = ..., last_activity_ms: _Optional[int] = ..., usage: _Optional[_Union[_sandbox_pb2.ResourceUsage, _Mapping]] = ..., running_execs: _Optional[int] = ..., first_event_offset: _Optional[int] = ..., next_event_offset: _Optional[int] = ..., owner: _Optional[str] = ..., profile: _Optional[str] = ...) -> None: ...

class SandboxEndedEvent(_message.Message):
    __slots__ = ["cancelled_execs", "message", "reason"]
    CANCELLED_EXECS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    cancelled_execs: int
    message: str
    reason: EndReason
    def __init__(self, reason: _Optional[_Union[EndReason, str]] = ..., cancelled_execs: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class SandboxEvent(_message.Message):
    __slots__ = ["directory_made", "ended", "exec_ended", "exec_output", "exec_started", "expiring", "file_moved", "file_removed", "file_written", "offset", "ready", "sandbox_id", "time_ms"]
    DIRECTORY_MADE_FIELD_NUMBER: _ClassVar[int]
    ENDED_FIELD_NUMBER: _ClassVar[int]
    EXEC_ENDED_FIELD_NUMBER: _ClassVar[int]
    EXEC_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    EXEC_STARTED_FIELD_NUMBER: _ClassVar[int]
    EXPIRING_FIELD_NUMBER: _ClassVar[int]
    FILE_MOVED_FIELD_NUMBER: _ClassVar[int]
    FILE_REMOVED_FIELD_NUMBER: _ClassVar[int]
    FILE_WRITTEN_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    READY_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    TIME_MS_FIELD_NUMBER: _ClassVar[int]
    directory_made: DirectoryMadeEvent
    ended: SandboxEndedEvent
    exec_ended: ExecEndedEvent
    exec_output: ExecOutputEvent
    exec_started: ExecStartedEvent
    expiring: SandboxExpiringEvent
    file_moved: FileMovedEvent
    file_removed: FileRemovedEvent
    file_written: FileWrittenEvent
    offset: int
    ready: SandboxReadyEvent
    sandbox_id: str
    time_ms: int
    def __init__(self, offset: _Optional[int] = ..., time_ms: _Optional[int] = ..., sandbox_id: _Optional[str] = ..., ready: _Optional[_Union[SandboxReadyEvent, _Mapping]] = ..., exec_started: _Optional[_Union[ExecStartedEvent, _Mapping]] = ..., exec_output: _Optional[_Union[ExecOutputEvent, _Mapping]] = ..., exec_ended: _Optional[_Union[ExecEndedEvent, _Mapping]] = ..., file_written: _Optional[_Union[FileWrittenEvent, _Mapping]] = ..., file_removed: _Optional[_Union[FileRemovedEvent, _Mapping]] = ..., directory_made: _Optional[_Union[DirectoryMadeEvent, _Mapping]] = ..., expiring: _Optional[_Union[SandboxExpiringEvent, _Mapping]] = ..., ended: _Optional[_Union[SandboxEndedEvent, _Mapping]] = ..., file_moved: _Optional[_Union[FileMovedEvent, _Mapping]] = ...) -> None: ...

class SandboxExpiringEvent(_message.Message):
    __slots__ = ["reason"]
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: EndReason
    def __init__(self, reason: _Optional[_Union[EndReason, str]] = ...) -> None: ...

class SandboxReadyEvent(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class SignalExecRequest(_message.Message):
    __slots__ = ["execution_id", "signal"]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    execution_id: str
    signal: int
    def __init__(self, execution_id: _Optional[str] = ..., signal: _Optional[int] = ...) -> None: ...

class SignalExecResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class StatFileRequest(_message.Message):
    __slots__ = ["path", "sandbox_id"]
    PATH_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    path: str
    sandbox_id: str
    def __init__(self, sandbox_id: _Optional[str] = ..., path: _Optional[str] = ...) -> None: ...

class StatFileResponse(_message.Message):
    __slots__ = ["exists", "info"]
    EXISTS_FIELD_NUMBER: _ClassVar[int]
    INFO_FIELD_NUMBER: _ClassVar[int]
    exists: bool
    info: FileInfo
    def __init__(self, exists: bool = ..., info: _Optional[_Union[FileInfo, _Mapping]] = ...) -> None: ...

class SubscribeEventsRequest(_message.Message):
    __slots__ = ["from_offset", "sandbox_id"]
    FROM_OFFSET_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    from_offset: int
    sandbox_id: str
    def __init__(self, sandbox_id: _Optional[str] = ..., from_offset: _Optional[int] = ...) -> None: ...

class UploadFileHeader(_message.Message):
    __slots__ = ["mode", "path", "sandbox_id"]
    MODE_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    mode: int
    path: str
    sandbox_id: str
    def __init__(self, sandbox_id: _Optional[str] = ..., path: _Optional[str] = ..., mode: _Optional[int] = ...) -> None: ...

class UploadFileRequest(_message.Message):
    __slots__ = ["data", "header"]
    DATA_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    header: UploadFileHeader
    def __init__(self, header: _Optional[_Union[UploadFileHeader, _Mapping]] = ..., data: _Optional[bytes] = ...) -> None: ...

class UploadFileResponse(_message.Message):
    __slots__ = ["bytes_written", "path"]
    BYTES_WRITTEN_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    bytes_written: int
    path: str
    def __init__(self, path: _Optional[str] = ..., bytes_written: _Optional[int] = ...) -> None: ...

class WriteStdinRequest(_message.Message):
    __slots__ = ["close", "data", "execution_id"]
    CLOSE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    close: bool
    data: bytes
    execution_id: str
    def __init__(self, execution_id: _Optional[str] = ..., data: _Optional[bytes] = ..., close: bool = ...) -> None: ...

class WriteStdinResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class SandboxState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class FileType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class OutputStream(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class EndReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
