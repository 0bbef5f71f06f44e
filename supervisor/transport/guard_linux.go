package transport

import (
	"net"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// peerUID returns the uid of a unix socket's peer (SO_PEERCRED).
func peerUID(c *net.UnixConn) (string, bool) {
	raw, err := c.SyscallConn()
	if err != nil {
		return "", false
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) { cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil || cerr != nil {
		return "", false
	}
	return strconv.FormatUint(uint64(cred.Uid), 10), true
}

// nofileLimit returns the process's soft RLIMIT_NOFILE, 0 if unknown.
func nofileLimit() int {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur > 1<<30 {
		return 0
	}
	return int(r.Cur)
}
