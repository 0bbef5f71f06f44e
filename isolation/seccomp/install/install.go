// Package install loads an assembled seccomp filter into the calling
// process: the half of package seccomp that runs in every sandbox's
// worker. The policy and its assembly (package seccomp, with
// go-seccomp-bpf's syscall tables) stay in the supervisor, which
// assembles the filter once and hands each worker its bytes (Encode,
// Decode), so that a sandbox's start-up neither links nor runs them.
package install

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/execfarm/execfarm/isolation"
)

var (
	// ErrNotSupported is returned by Filter when the kernel lacks seccomp
	// filter mode, or outside Linux. It wraps isolation.ErrNotSupported.
	ErrNotSupported = isolation.NotSupported("seccomp: not supported on this platform")

	// ErrThreadSync is returned by Filter when the kernel could not apply
	// the filter to every thread (SECCOMP_FILTER_FLAG_TSYNC): a thread
	// already runs under a filter that is not an ancestor of the caller's.
	ErrThreadSync = errors.New("seccomp: cannot synchronise filter across threads")

	// ErrMalformed is returned by Decode for bytes that are not a filter.
	ErrMalformed = errors.New("seccomp: malformed filter")
)

// Instruction is one classic BPF instruction, as struct sock_filter.
type Instruction struct {
	Code   uint16
	Jt, Jf uint8
	K      uint32
}

// instructionSize is the size of struct sock_filter.
const instructionSize = 8

// maxInstructions is the kernel's BPF_MAXINSNS.
const maxInstructions = 4096

// Encode serialises prog as the kernel lays out struct sock_filter,
// little-endian: 8 bytes an instruction.
func Encode(prog []Instruction) []byte {
	out := make([]byte, 0, len(prog)*instructionSize)
	for _, in := range prog {
		out = binary.LittleEndian.AppendUint16(out, in.Code)
		out = append(out, in.Jt, in.Jf)
		out = binary.LittleEndian.AppendUint32(out, in.K)
	}
	return out
}

// Decode is the inverse of Encode. It returns an error wrapping
// ErrMalformed when b is empty, not a whole number of instructions, or
// longer than the kernel accepts (4096 instructions).
func Decode(b []byte) ([]Instruction, error) {
	if len(b) == 0 || len(b)%instructionSize != 0 || len(b)/instructionSize > maxInstructions {
		return nil, fmt.Errorf("%w: %d bytes", ErrMalformed, len(b))
	}
	out := make([]Instruction, len(b)/instructionSize)
	for i := range out {
		r := b[i*instructionSize:]
		out[i] = Instruction{Code: binary.LittleEndian.Uint16(r), Jt: r[2], Jf: r[3], K: binary.LittleEndian.Uint32(r[4:])}
	}
	return out, nil
}
