// One Error subclass per failure kind, mapped once from a gRPC status code
// and the google.rpc.ErrorInfo reason execfarm puts in every error it raises
// (proto/PROTOCOL.md, "Errors"). The server's message is kept as it is.
import { Metadata, status as grpcStatus, type ServiceError } from "@grpc/grpc-js";
import { Status } from "./gen/google/rpc/status.js";
import { BadRequest, ErrorInfo, RetryInfo } from "./gen/google/rpc/error_details.js";

/** What every error of this package carries. */
export class ExecfarmError extends Error {
  /** The gRPC code's name ("NOT_FOUND", ...); "" for errors raised here. */
  readonly code: string;
  /** The gRPC code's number; -1 for errors raised here. */
  readonly grpcCode: number;
  /** ErrorInfo.reason ("SANDBOX_NOT_FOUND", "QUOTA_EXCEEDED", ...); "" when the server sent none. */
  readonly reason: string;
  /** ErrorInfo.metadata. */
  readonly metadata: Readonly<Record<string, string>>;
  /** The request field at fault (BadRequest), "" when none. */
  readonly field: string;
  /** RetryInfo.retry_delay in milliseconds, undefined when the server sent none. */
  readonly retryDelayMs: number | undefined;

  constructor(message: string, init: Partial<Pick<ExecfarmError, "code" | "grpcCode" | "reason" | "metadata" | "field" | "retryDelayMs">> = {}, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = init.code ?? "";
    this.grpcCode = init.grpcCode ?? -1;
    this.reason = init.reason ?? "";
    this.metadata = init.metadata ?? {};
    this.field = init.field ?? "";
    this.retryDelayMs = init.retryDelayMs;
  }
}

export class InvalidArgumentError extends ExecfarmError {}
export class NotFoundError extends ExecfarmError {}
export class AlreadyExistsError extends ExecfarmError {}
export class FailedPreconditionError extends ExecfarmError {}
export class PermissionDeniedError extends ExecfarmError {}
export class UnauthenticatedError extends ExecfarmError {}
export class ResourceExhaustedError extends ExecfarmError {}
export class OutOfRangeError extends ExecfarmError {}
export class UnavailableError extends ExecfarmError {}
export class DeadlineExceededError extends ExecfarmError {}
/** The call was cancelled: by an AbortSignal (cause: its reason) or by the server. */
export class CancelledError extends ExecfarmError {}
export class UnimplementedError extends ExecfarmError {}
export class InternalError extends ExecfarmError {}
/** The embedded supervisor could not start (not root, no binary, host check failed, not healthy in time). */
export class EmbeddedStartError extends ExecfarmError {}
/** The configuration (environment, options) is not usable. */
export class ConfigError extends ExecfarmError {}

const byCode: Record<number, typeof ExecfarmError> = {
  [grpcStatus.INVALID_ARGUMENT]: InvalidArgumentError,
  [grpcStatus.NOT_FOUND]: NotFoundError,
  [grpcStatus.ALREADY_EXISTS]: AlreadyExistsError,
  [grpcStatus.FAILED_PRECONDITION]: FailedPreconditionError,
  [grpcStatus.PERMISSION_DENIED]: PermissionDeniedError,
  [grpcStatus.UNAUTHENTICATED]: UnauthenticatedError,
  [grpcStatus.RESOURCE_EXHAUSTED]: ResourceExhaustedError,
  [grpcStatus.OUT_OF_RANGE]: OutOfRangeError,
  [grpcStatus.UNAVAILABLE]: UnavailableError,
  [grpcStatus.DEADLINE_EXCEEDED]: DeadlineExceededError,
  [grpcStatus.CANCELLED]: CancelledError,
  [grpcStatus.UNIMPLEMENTED]: UnimplementedError,
  [grpcStatus.INTERNAL]: InternalError,
};

const typePrefix = "type.googleapis.com/";

function isServiceError(err: unknown): err is ServiceError {
  return err instanceof Error && typeof (err as ServiceError).code === "number" && (err as ServiceError).metadata instanceof Metadata;
}

/**
 * fromGrpc turns a grpc-js error into this package's error for its code,
 * with the ErrorInfo, BadRequest and RetryInfo details the status carries.
 * Anything else is returned as it is.
 */
export function fromGrpc(err: unknown): unknown {
  if (err instanceof ExecfarmError || !isServiceError(err)) return err;
  const init: { -readonly [K in "code" | "grpcCode" | "reason" | "metadata" | "field" | "retryDelayMs"]?: ExecfarmError[K] } = {
    code: grpcStatus[err.code] ?? String(err.code),
    grpcCode: err.code,
  };
  let message = err.details || err.message;
  const bin = err.metadata.get("grpc-status-details-bin")[0];
  if (bin instanceof Buffer) {
    try {
      const st = Status.decode(bin);
      if (st.message) message = st.message;
      for (const d of st.details) {
        switch (d.typeUrl.startsWith(typePrefix) ? d.typeUrl.slice(typePrefix.length) : d.typeUrl) {
          case "google.rpc.ErrorInfo": {
            const info = ErrorInfo.decode(d.value);
            init.reason = info.reason;
            init.metadata = info.metadata;
            break;
          }
          case "google.rpc.BadRequest": {
            const v = BadRequest.decode(d.value).fieldViolations[0];
            if (v) init.field = v.field;
            break;
          }
          case "google.rpc.RetryInfo": {
            const delay = RetryInfo.decode(d.value).retryDelay;
            if (delay) init.retryDelayMs = delay.seconds * 1000 + Math.round(delay.nanos / 1e6);
            break;
          }
        }
      }
    } catch {
      // Undecodable details: the code and message still say what happened.
    }
  }
  const Kind = byCode[err.code] ?? ExecfarmError;
  return new Kind(message, init, { cause: err });
}
