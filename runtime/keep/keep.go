// Package keep is the control protocol of a kept runtime process
// (workerv1.RunRequest.keep): a goja process of a sandbox that will be
// reset and reused serves programs one after another, each in a runtime
// of its own, instead of one program per process. The worker holds one
// end of a unix SOCK_SEQPACKET socket, the process the other, named by
// Env.
//
// A request is one message of RequestBytes bytes (their value is
// ignored) carrying, as SCM_RIGHTS, in order: the program (read to end
// of file), stdout, stderr, then the results channel when the process
// runs tests and the console channel when it has one: the set is fixed by
// the process's shape, so a request with another count is answered with
// exit code 2 and nothing run. The reply is one message of ReplyBytes
// (Reply). It is sent once every descriptor of the request is closed (the
// worker's pipes are at end of file). End of file on the socket ends the
// process.
//
// It is a package of its own so that the worker speaks it without
// linking the goja runtime.
package keep

import (
	"encoding/binary"
	"errors"
)

// Env names the descriptor of the process's control socket.
const Env = "EXECFARM_SERVE_FD"

// Sizes of the messages.
const (
	RequestBytes = 1
	ReplyBytes   = 24
	// MaxFDs is the most descriptors a request carries.
	MaxFDs = 5
)

// Reply is the answer to one request: the run's exit code and the CPU
// time the process used for it (getrusage, microseconds).
type Reply struct {
	ExitCode                 int64
	UserMicros, SystemMicros int64
}

// Encode returns r as a message: three int64, little endian.
func (r Reply) Encode() []byte {
	b := make([]byte, ReplyBytes)
	binary.LittleEndian.PutUint64(b[0:], uint64(r.ExitCode))
	binary.LittleEndian.PutUint64(b[8:], uint64(r.UserMicros))
	binary.LittleEndian.PutUint64(b[16:], uint64(r.SystemMicros))
	return b
}

// ErrReply is returned by DecodeReply for a message of the wrong size.
var ErrReply = errors.New("keep: malformed reply")

// DecodeReply parses a reply message.
func DecodeReply(b []byte) (Reply, error) {
	if len(b) != ReplyBytes {
		return Reply{}, ErrReply
	}
	return Reply{
		ExitCode:     int64(binary.LittleEndian.Uint64(b[0:])),
		UserMicros:   int64(binary.LittleEndian.Uint64(b[8:])),
		SystemMicros: int64(binary.LittleEndian.Uint64(b[16:])),
	}, nil
}
