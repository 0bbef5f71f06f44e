//go:build linux

package host

// ReserveFileTable makes the host's file table hold every sandbox: it
// raises fs.file-max to FileTable.Required for slots sandboxes at the
// limits given (the server's ceilings) when it is lower, and never lowers
// it. It returns the file table as it was and the fs.file-max now in
// force. It fails, naming the value to set, when fs.file-max is too low
// and cannot be written (an unprivileged container): the supervisor must
// then not start, since its sandboxes could refuse files to the host.
func ReserveFileTable(slots int, memoryBytes, processes, fds int64) (before FileTable, now int64, err error) {
	return reserveFileTable("/", slots, memoryBytes, processes, fds)
}
