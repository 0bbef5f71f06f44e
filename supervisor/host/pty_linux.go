//go:build linux

package host

// ReservePtys makes the host's pseudo-terminal pool hold every sandbox:
// it raises kernel.pty.max to PtyTable.Required for slots sandboxes when
// it is lower, and never lowers it. It returns the table as it was and
// the kernel.pty.max now in force. It fails, naming the value to set,
// when kernel.pty.max is too low and cannot be written: the supervisor
// must then not start, since its sandboxes could refuse pseudo-terminals
// to the host's containers.
func ReservePtys(slots int) (before PtyTable, now int64, err error) {
	return reservePtys("/", slots)
}
