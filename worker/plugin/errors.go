package plugin

// ErrorDomain is the domain of the google.rpc.ErrorInfo detail the worker
// attaches to a failed file call; its reason is the errno's name
// ("ENOENT", "ENOSPC"...) or one of the reasons below, which the
// supervisor maps to its errors (supervisor/sandbox) in one place.
const ErrorDomain = "worker.execfarm.dev"

// Reasons of a failed file call that no errno names.
const (
	// ReasonInvalidPath: the path is not one a file call takes
	// (rootfs.SandboxPath: NUL, too long, ".." above the root; or the
	// root where a file is needed). INVALID_ARGUMENT.
	ReasonInvalidPath = "INVALID_PATH"
	// ReasonNotRegular: a download of something other than a regular
	// file or directory (a FIFO, a device). FAILED_PRECONDITION.
	ReasonNotRegular = "NOT_REGULAR"
)
