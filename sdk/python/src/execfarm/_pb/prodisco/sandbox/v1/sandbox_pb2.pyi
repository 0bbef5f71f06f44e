from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
EXECUTION_STATE_CANCELLED: ExecutionState
EXECUTION_STATE_COMPLETED: ExecutionState
EXECUTION_STATE_FAILED: ExecutionState
EXECUTION_STATE_PENDING: ExecutionState
EXECUTION_STATE_RUNNING: ExecutionState
EXECUTION_STATE_TIMEOUT: ExecutionState
EXECUTION_STATE_UNSPECIFIED: ExecutionState
RUNTIME_GOJA: Runtime
RUNTIME_NODE: Runtime
RUNTIME_PYTHON: Runtime
RUNTIME_SHELL: Runtime
RUNTIME_UNSPECIFIED: Runtime
TERMINATION_REASON_CANCELLED: TerminationReason
TERMINATION_REASON_CPU_TIME: TerminationReason
TERMINATION_REASON_EXITED: TerminationReason
TERMINATION_REASON_INTERNAL: TerminationReason
TERMINATION_REASON_MEMORY: TerminationReason
TERMINATION_REASON_OUTPUT_LIMIT: TerminationReason
TERMINATION_REASON_PIDS: TerminationReason
TERMINATION_REASON_SIGNAL: TerminationReason
TERMINATION_REASON_TIMEOUT: TerminationReason
TERMINATION_REASON_UNSPECIFIED: TerminationReason

class CacheEntry(_message.Message):
    __slots__ = ["content_hash", "content_sha256", "created_at_ms", "description", "name"]
    CONTENT_HASH_FIELD_NUMBER: _ClassVar[int]
    CONTENT_SHA256_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    content_hash: str
    content_sha256: str
    created_at_ms: int
    description: str
    name: str
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., created_at_ms: _Optional[int] = ..., content_hash: _Optional[str] = ..., content_sha256: _Optional[str] = ...) -> None: ...

class CancelExecutionRequest(_message.Message):
    __slots__ = ["execution_id"]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    execution_id: str
    def __init__(self, execution_id: _Optional[str] = ...) -> None: ...

class CancelExecutionResponse(_message.Message):
    __slots__ = ["message", "state", "success"]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    message: str
    state: ExecutionState
    success: bool
    def __init__(self, success: bool = ..., state: _Optional[_Union[ExecutionState, str]] = ..., message: _Optional[str] = ...) -> None: ...

class ClearCacheRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ClearCacheResponse(_message.Message):
    __slots__ = ["deleted_count"]
    DELETED_COUNT_FIELD_NUMBER: _ClassVar[int]
    deleted_count: int
    def __init__(self, deleted_count: _Optional[int] = ...) -> None: ...

class ExecuteAsyncResponse(_message.Message):
    __slots__ = ["execution_id", "queue_position", "state"]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    QUEUE_POSITION_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    execution_id: str
    queue_position: int
    state: ExecutionState
    def __init__(self, execution_id: _Optional[str] = ..., state: _Optional[_Union[ExecutionState, str]] = ..., queue_position: _Optional[int] = ...) -> None: ...

class ExecuteChunk(_message.Message):
    __slots__ = ["error_output", "execution_id", "output", "result", "stream_offset", "timestamp_ms"]
    ERROR_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    STREAM_OFFSET_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    error_output: str
    execution_id: str
    output: str
    result: ExecuteResult
    stream_offset: int
    timestamp_ms: int
    def __init__(self, execution_id: _Optional[str] = ..., output: _Optional[str] = ..., error_output: _Optional[str] = ..., result: _Optional[_Union[ExecuteResult, _Mapping]] = ..., timestamp_ms: _Optional[int] = ..., stream_offset: _Optional[int] = ...) -> None: ...

class ExecuteRequest(_message.Message):
    __slots__ = ["cached", "code", "deterministic", "env", "limits", "raw_output", "runtime", "seed", "stdin", "timeout_ms"]
    class EnvEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CACHED_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    DETERMINISTIC_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    RAW_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    STDIN_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    cached: str
    code: str
    deterministic: bool
    env: _containers.ScalarMap[str, str]
    limits: ResourceLimits
    raw_output: bool
    runtime: Runtime
    seed: int
    stdin: bytes
    timeout_ms: int
    def __init__(self, code: _Optional[str] = ..., cached: _Optional[str] = ..., timeout_ms: _Optional[int] = ..., runtime: _Optional[_Union[Runtime, str]] = ..., limits: _Optional[_Union[ResourceLimits, _Mapping]] = ..., stdin: _Optional[bytes] = ..., env: _Optional[_Mapping[str, str]] = ..., raw_output: bool = ..., deterministic: bool = ..., seed: _Optional[int] = ...) -> None: ...

class ExecuteResponse(_message.Message):
    __slots__ = ["cached", "error", "error_output", "error_output_partial", "execution_time_ms", "outcome", "output", "output_partial", "state", "success"]
    CACHED_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    ERROR_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    ERROR_OUTPUT_PARTIAL_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_PARTIAL_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    cached: CacheEntry
    error: str
    error_output: str
    error_output_partial: bool
    execution_time_ms: int
    outcome: ExecutionOutcome
    output: str
    output_partial: bool
    state: ExecutionState
    success: bool
    def __init__(self, success: bool = ..., output: _Optional[str] = ..., error: _Optional[str] = ..., execution_time_ms: _Optional[int] = ..., cached: _Optional[_Union[CacheEntry, _Mapping]] = ..., state: _Optional[_Union[ExecutionState, str]] = ..., error_output: _Optional[str] = ..., outcome: _Optional[_Union[ExecutionOutcome, _Mapping]] = ..., output_partial: bool = ..., error_output_partial: bool = ...) -> None: ...

class ExecuteResult(_message.Message):
    __slots__ = ["cached", "error", "execution_time_ms", "outcome", "state", "success"]
    CACHED_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    cached: CacheEntry
    error: str
    execution_time_ms: int
    outcome: ExecutionOutcome
    state: ExecutionState
    success: bool
    def __init__(self, success: bool = ..., error: _Optional[str] = ..., execution_time_ms: _Optional[int] = ..., state: _Optional[_Union[ExecutionState, str]] = ..., cached: _Optional[_Union[CacheEntry, _Mapping]] = ..., outcome: _Optional[_Union[ExecutionOutcome, _Mapping]] = ...) -> None: ...

class ExecuteTestRequest(_message.Message):
    __slots__ = ["code", "deterministic", "limits", "raw_output", "runtime", "seed", "tests", "timeout_ms"]
    CODE_FIELD_NUMBER: _ClassVar[int]
    DETERMINISTIC_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    RAW_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    TESTS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    code: str
    deterministic: bool
    limits: ResourceLimits
    raw_output: bool
    runtime: Runtime
    seed: int
    tests: str
    timeout_ms: int
    def __init__(self, code: _Optional[str] = ..., tests: _Optional[str] = ..., timeout_ms: _Optional[int] = ..., runtime: _Optional[_Union[Runtime, str]] = ..., limits: _Optional[_Union[ResourceLimits, _Mapping]] = ..., raw_output: bool = ..., deterministic: bool = ..., seed: _Optional[int] = ...) -> None: ...

class ExecuteTestResponse(_message.Message):
    __slots__ = ["error", "error_output", "error_output_partial", "execution_time_ms", "outcome", "output", "output_partial", "success", "summary", "tests"]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    ERROR_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    ERROR_OUTPUT_PARTIAL_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_PARTIAL_FIELD_NUMBER: _ClassVar[int]
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    TESTS_FIELD_NUMBER: _ClassVar[int]
    error: str
    error_output: str
    error_output_partial: bool
    execution_time_ms: int
    outcome: ExecutionOutcome
    output: str
    output_partial: bool
    success: bool
    summary: TestSummary
    tests: _containers.RepeatedCompositeFieldContainer[TestResult]
    def __init__(self, success: bool = ..., summary: _Optional[_Union[TestSummary, _Mapping]] = ..., tests: _Optional[_Iterable[_Union[TestResult, _Mapping]]] = ..., output: _Optional[str] = ..., execution_time_ms: _Optional[int] = ..., error: _Optional[str] = ..., outcome: _Optional[_Union[ExecutionOutcome, _Mapping]] = ..., error_output: _Optional[str] = ..., output_partial: bool = ..., error_output_partial: bool = ...) -> None: ...

class ExecutionInfo(_message.Message):
    __slots__ = ["cached_name", "code_preview", "execution_id", "finished_at_ms", "is_cached", "queue_position", "runtime", "sandbox_id", "started_at_ms", "state", "termination_reason"]
    CACHED_NAME_FIELD_NUMBER: _ClassVar[int]
    CODE_PREVIEW_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    IS_CACHED_FIELD_NUMBER: _ClassVar[int]
    QUEUE_POSITION_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TERMINATION_REASON_FIELD_NUMBER: _ClassVar[int]
    cached_name: str
    code_preview: str
    execution_id: str
    finished_at_ms: int
    is_cached: bool
    queue_position: int
    runtime: Runtime
    sandbox_id: str
    started_at_ms: int
    state: ExecutionState
    termination_reason: TerminationReason
    def __init__(self, execution_id: _Optional[str] = ..., state: _Optional[_Union[ExecutionState, str]] = ..., started_at_ms: _Optional[int] = ..., finished_at_ms: _Optional[int] = ..., code_preview: _Optional[str] = ..., is_cached: bool = ..., cached_name: _Optional[str] = ..., runtime: _Optional[_Union[Runtime, str]] = ..., termination_reason: _Optional[_Union[TerminationReason, str]] = ..., queue_position: _Optional[int] = ..., sandbox_id: _Optional[str] = ...) -> None: ...

class ExecutionOutcome(_message.Message):
    __slots__ = ["deterministic", "effective_limits", "execution_id", "exit_code", "queue_wait_ms", "runtime", "sandbox_id", "seed", "signal", "stderr_bytes", "stderr_truncated", "stdout_bytes", "stdout_truncated", "termination_reason", "usage"]
    DETERMINISTIC_FIELD_NUMBER: _ClassVar[int]
    EFFECTIVE_LIMITS_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    QUEUE_WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    STDERR_BYTES_FIELD_NUMBER: _ClassVar[int]
    STDERR_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    STDOUT_BYTES_FIELD_NUMBER: _ClassVar[int]
    STDOUT_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    TERMINATION_REASON_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    deterministic: bool
    effective_limits: ResourceLimits
    execution_id: str
    exit_code: int
    queue_wait_ms: int
    runtime: Runtime
    sandbox_id: str
    seed: int
    signal: int
    stderr_bytes: int
    stderr_truncated: bool
    stdout_bytes: int
    stdout_truncated: bool
    termination_reason: TerminationReason
    usage: ResourceUsage
    def __init__(self, execution_id: _Optional[str] = ..., termination_reason: _Optional[_Union[TerminationReason, str]] = ..., exit_code: _Optional[int] = ..., signal: _Optional[int] = ..., usage: _Optional[_Union[ResourceUsage, _Mapping]] = ..., effective_limits: _Optional[_Union[ResourceLimits, _Mapping]] = ..., stdout_truncated: bool = ..., stderr_truncated: bool = ..., queue_wait_ms: _Optional[int] = ..., runtime: _Optional[_Union[Runtime, str]] = ..., sandbox_id: _Optional[str] = ..., stdout_bytes: _Optional[int] = ..., stderr_bytes: _Optional[int] = ..., deterministic: bool = ..., seed: _Optional[int] = ...) -> None: ...

class GetExecutionRequest(_message.Message):
    __slots__ = ["error_output_offset", "execution_id", "output_offset", "wait"]
    ERROR_OUTPUT_OFFSET_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_OFFSET_FIELD_NUMBER: _ClassVar[int]
    WAIT_FIELD_NUMBER: _ClassVar[int]
    error_output_offset: int
    execution_id: str
    output_offset: int
    wait: bool
    def __init__(self, execution_id: _Optional[str] = ..., wait: bool = ..., output_offset: _Optional[int] = ..., error_output_offset: _Optional[int] = ...) -> None: ...

class GetExecutionResponse(_message.Message):
    __slots__ = ["error_output", "error_output_dropped_bytes", "error_output_gap_index", "error_output_length", "execution_id", "output", "output_dropped_bytes", "output_gap_index", "output_length", "queue_position", "result", "state"]
    ERROR_OUTPUT_DROPPED_BYTES_FIELD_NUMBER: _ClassVar[int]
    ERROR_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    ERROR_OUTPUT_GAP_INDEX_FIELD_NUMBER: _ClassVar[int]
    ERROR_OUTPUT_LENGTH_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_DROPPED_BYTES_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_GAP_INDEX_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_LENGTH_FIELD_NUMBER: _ClassVar[int]
    QUEUE_POSITION_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    error_output: str
    error_output_dropped_bytes: int
    error_output_gap_index: int
    error_output_length: int
    execution_id: str
    output: str
    output_dropped_bytes: int
    output_gap_index: int
    output_length: int
    queue_position: int
    result: ExecuteResult
    state: ExecutionState
    def __init__(self, execution_id: _Optional[str] = ..., state: _Optional[_Union[ExecutionState, str]] = ..., output: _Optional[str] = ..., error_output: _Optional[str] = ..., output_length: _Optional[int] = ..., error_output_length: _Optional[int] = ..., result: _Optional[_Union[ExecuteResult, _Mapping]] = ..., queue_position: _Optional[int] = ..., output_dropped_bytes: _Optional[int] = ..., output_gap_index: _Optional[int] = ..., error_output_dropped_bytes: _Optional[int] = ..., error_output_gap_index: _Optional[int] = ...) -> None: ...

class HealthCheckRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class HealthCheckResponse(_message.Message):
    __slots__ = ["default_runtime", "healthy", "kubernetes_context", "layers", "memory_budget_bytes", "memory_held_bytes", "node", "queued", "running", "unhealthy_reason", "version", "warm_pool_in_use", "warm_pool_ready", "warm_pool_size", "warm_pool_starting"]
    DEFAULT_RUNTIME_FIELD_NUMBER: _ClassVar[int]
    HEALTHY_FIELD_NUMBER: _ClassVar[int]
    KUBERNETES_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    LAYERS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BUDGET_BYTES_FIELD_NUMBER: _ClassVar[int]
    MEMORY_HELD_BYTES_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    QUEUED_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    UNHEALTHY_REASON_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    WARM_POOL_IN_USE_FIELD_NUMBER: _ClassVar[int]
    WARM_POOL_READY_FIELD_NUMBER: _ClassVar[int]
    WARM_POOL_SIZE_FIELD_NUMBER: _ClassVar[int]
    WARM_POOL_STARTING_FIELD_NUMBER: _ClassVar[int]
    default_runtime: str
    healthy: bool
    kubernetes_context: str
    layers: _containers.RepeatedCompositeFieldContainer[IsolationLayer]
    memory_budget_bytes: int
    memory_held_bytes: int
    node: str
    queued: int
    running: int
    unhealthy_reason: str
    version: str
    warm_pool_in_use: int
    warm_pool_ready: int
    warm_pool_size: int
    warm_pool_starting: int
    def __init__(self, healthy: bool = ..., kubernetes_context: _Optional[str] = ..., layers: _Optional[_Iterable[_Union[IsolationLayer, _Mapping]]] = ..., running: _Optional[int] = ..., queued: _Optional[int] = ..., version: _Optional[str] = ..., default_runtime: _Optional[str] = ..., warm_pool_size: _Optional[int] = ..., warm_pool_ready: _Optional[int] = ..., warm_pool_starting: _Optional[int] = ..., warm_pool_in_use: _Optional[int] = ..., node: _Optional[str] = ..., memory_budget_bytes: _Optional[int] = ..., memory_held_bytes: _Optional[int] = ..., unhealthy_reason: _Optional[str] = ...) -> None: ...

class IsolationLayer(_message.Message):
    __slots__ = ["active", "available", "detail", "name"]
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    active: bool
    available: bool
    detail: str
    name: str
    def __init__(self, name: _Optional[str] = ..., available: bool = ..., active: bool = ..., detail: _Optional[str] = ...) -> None: ...

class ListCacheRequest(_message.Message):
    __slots__ = ["filter"]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    filter: str
    def __init__(self, filter: _Optional[str] = ...) -> None: ...

class ListCacheResponse(_message.Message):
    __slots__ = ["entries"]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[CacheEntry]
    def __init__(self, entries: _Optional[_Iterable[_Union[CacheEntry, _Mapping]]] = ...) -> None: ...

class ListExecutionsRequest(_message.Message):
    __slots__ = ["include_completed_within_ms", "limit", "sandbox_id", "states"]
    INCLUDE_COMPLETED_WITHIN_MS_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    STATES_FIELD_NUMBER: _ClassVar[int]
    include_completed_within_ms: int
    limit: int
    sandbox_id: str
    states: _containers.RepeatedScalarFieldContainer[ExecutionState]
    def __init__(self, states: _Optional[_Iterable[_Union[ExecutionState, str]]] = ..., limit: _Optional[int] = ..., include_completed_within_ms: _Optional[int] = ..., sandbox_id: _Optional[str] = ...) -> None: ...

class ListExecutionsResponse(_message.Message):
    __slots__ = ["executions"]
    EXECUTIONS_FIELD_NUMBER: _ClassVar[int]
    executions: _containers.RepeatedCompositeFieldContainer[ExecutionInfo]
    def __init__(self, executions: _Optional[_Iterable[_Union[ExecutionInfo, _Mapping]]] = ...) -> None: ...

class ResourceLimits(_message.Message):
    __slots__ = ["cpu_time_ms", "max_cpu_percent", "max_file_descriptors", "max_memory_bytes", "max_output_bytes", "max_processes", "timeout_ms", "workspace_bytes"]
    CPU_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_CPU_PERCENT_FIELD_NUMBER: _ClassVar[int]
    MAX_FILE_DESCRIPTORS_FIELD_NUMBER: _ClassVar[int]
    MAX_MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_OUTPUT_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_PROCESSES_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_BYTES_FIELD_NUMBER: _ClassVar[int]
    cpu_time_ms: int
    max_cpu_percent: int
    max_file_descriptors: int
    max_memory_bytes: int
    max_output_bytes: int
    max_processes: int
    timeout_ms: int
    workspace_bytes: int
    def __init__(self, max_memory_bytes: _Optional[int] = ..., max_cpu_percent: _Optional[int] = ..., max_file_descriptors: _Optional[int] = ..., max_processes: _Optional[int] = ..., max_output_bytes: _Optional[int] = ..., timeout_ms: _Optional[int] = ..., cpu_time_ms: _Optional[int] = ..., workspace_bytes: _Optional[int] = ...) -> None: ...

class ResourceUsage(_message.Message):
    __slots__ = ["cpu_system_us", "cpu_user_us", "oom_kills", "peak_memory_bytes", "peak_memory_source", "pids_peak", "wall_ms"]
    CPU_SYSTEM_US_FIELD_NUMBER: _ClassVar[int]
    CPU_USER_US_FIELD_NUMBER: _ClassVar[int]
    OOM_KILLS_FIELD_NUMBER: _ClassVar[int]
    PEAK_MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    PEAK_MEMORY_SOURCE_FIELD_NUMBER: _ClassVar[int]
    PIDS_PEAK_FIELD_NUMBER: _ClassVar[int]
    WALL_MS_FIELD_NUMBER: _ClassVar[int]
    cpu_system_us: int
    cpu_user_us: int
    oom_kills: int
    peak_memory_bytes: int
    peak_memory_source: str
    pids_peak: int
    wall_ms: int
    def __init__(self, cpu_user_us: _Optional[int] = ..., cpu_system_us: _Optional[int] = ..., wall_ms: _Optional[int] = ..., peak_memory_bytes: _Optional[int] = ..., peak_memory_source: _Optional[str] = ..., pids_peak: _Optional[int] = ..., oom_kills: _Optional[int] = ...) -> None: ...

class TestResult(_message.Message):
    __slots__ = ["duration_ms", "error", "name", "passed", "skipped"]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PASSED_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_FIELD_NUMBER: _ClassVar[int]
    duration_ms: int
    error: str
    name: str
    passed: bool
    skipped: bool
    def __init__(self, name: _Optional[str] = ..., passed: bool = ..., error: _Optional[str] = ..., duration_ms: _Optional[int] = ..., skipped: bool = ...) -> None: ...

class TestSummary(_message.Message):
    __slots__ = ["failed", "passed", "skipped", "total"]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    PASSED_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    failed: int
    passed: int
    skipped: int
    total: int
    def __init__(self, total: _Optional[int] = ..., passed: _Optional[int] = ..., failed: _Optional[int] = ..., skipped: _Optional[int] = ...) -> None: ...

class Runtime(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class TerminationReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ExecutionState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
