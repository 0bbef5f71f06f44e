//go:build linux

package forkserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"syscall"

	"golang.org/x/sys/unix"
)

// minExecFD is the lowest descriptor the server keeps the executable at
// while it forks: above every descriptor a child is given (Spawn.Files),
// which the child moves to 0..n-1 before it executes
// /proc/self/fd/<exe>.
const minExecFD = 64

// message is one datagram in either direction. Requests: op "spawn"
// (fds: the executable, then Files, then the cgroup fd if
// UseCgroupFD) and "release". Answers: "hello" (first, with Version),
// "spawned" (ID, Pid or Err and Errno; fds: the child's pidfd), "exited" (Pid,
// Status), sent once per child whenever it exits, and "reaped" (Pid),
// sent once a released child is reaped, before any "spawned" that could
// name the same pid again.
type message struct {
	Op      string `json:"op"`
	Version int    `json:"version,omitempty"`
	ID      uint64 `json:"id,omitempty"`
	Pid     int    `json:"pid,omitempty"`
	Err     string `json:"err,omitempty"`
	// Errno is the errno Err wraps (0: none): a SpawnError on the client.
	Errno  syscall.Errno `json:"errno,omitempty"`
	Status uint32        `json:"status,omitempty"` // syscall.WaitStatus

	Argv  []string `json:"argv,omitempty"`
	Env   []string `json:"env,omitempty"`
	Dir   string   `json:"dir,omitempty"`
	Files int      `json:"files,omitempty"`
	Sys   *sysAttr `json:"sys,omitempty"`
}

// sysAttr is the part of syscall.SysProcAttr a sandbox worker uses; a
// Spawn asking for anything else is refused rather than half-honoured.
type sysAttr struct {
	Cloneflags  uintptr                `json:"cloneflags,omitempty"`
	UidMappings []syscall.SysProcIDMap `json:"uid_mappings,omitempty"`
	GidMappings []syscall.SysProcIDMap `json:"gid_mappings,omitempty"`
	Setgroups   bool                   `json:"setgroups,omitempty"`
	Credential  *syscall.Credential    `json:"credential,omitempty"`
	Pdeathsig   syscall.Signal         `json:"pdeathsig,omitempty"`
	Setsid      bool                   `json:"setsid,omitempty"`
	CgroupFD    bool                   `json:"cgroup_fd,omitempty"`
}

// recvMsg receives one datagram on rc (a non-blocking socket, waited for
// through the runtime's poller) and the descriptors it carries, which are
// close-on-exec. A closed peer gives io.EOF.
func recvMsg(rc syscall.RawConn, buf, oob []byte) (message, []int, error) {
	var n, oobn int
	var rerr error
	err := rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = unix.Recvmsg(int(fd), buf, oob, unix.MSG_CMSG_CLOEXEC)
		return !errors.Is(rerr, unix.EAGAIN) && !errors.Is(rerr, unix.EINTR)
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return message{}, nil, err
	}
	fds, err := parseFDs(oob[:oobn])
	if err != nil {
		return message{}, nil, err
	}
	if n == 0 {
		closeAll(fds)
		return message{}, nil, io.EOF
	}
	var m message
	if err := json.Unmarshal(buf[:n], &m); err != nil {
		closeAll(fds)
		return message{}, nil, fmt.Errorf("forkserver: bad message: %w", err)
	}
	return m, fds, nil
}

// sendMsg sends m on rc with fds (may be empty) as SCM_RIGHTS.
func sendMsg(rc syscall.RawConn, m message, fds ...int) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	var serr error
	err = rc.Write(func(fd uintptr) bool {
		serr = unix.Sendmsg(int(fd), b, oob, nil, 0)
		return !errors.Is(serr, unix.EAGAIN) && !errors.Is(serr, unix.EINTR)
	})
	if err == nil {
		err = serr
	}
	return err
}

func parseFDs(oob []byte) ([]int, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("forkserver: control message: %w", err)
	}
	var fds []int
	for _, m := range msgs {
		r, err := unix.ParseUnixRights(&m)
		if err != nil {
			closeAll(fds)
			return nil, fmt.Errorf("forkserver: control message: %w", err)
		}
		fds = append(fds, r...)
	}
	return fds, nil
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}
