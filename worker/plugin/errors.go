package plugin

// Reasons of a failed file call that no errno names
// (workerv1.ErrorDetail.reason; otherwise the reason is the errno's name).
const (
	// ReasonInvalidPath: the path is not one a file call takes
	// (rootfs.SandboxPath: NUL, too long, ".." above the root; or the
	// root where a file is needed). INVALID_ARGUMENT.
	ReasonInvalidPath = "INVALID_PATH"
	// ReasonNotRegular: a download of something other than a regular
	// file or directory (a FIFO, a device). FAILED_PRECONDITION.
	ReasonNotRegular = "NOT_REGULAR"
)
