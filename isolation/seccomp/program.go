package seccomp

import (
	"fmt"
	"runtime"

	seccompbpf "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/net/bpf"
)

// Layout of struct seccomp_data (include/uapi/linux/seccomp.h) as the filter
// reads it on little-endian x86_64: each 64-bit argument is two 32-bit words,
// low word first.
const (
	offNr   = 0  // int nr
	offArch = 4  // __u32 arch
	offArgs = 16 // __u64 args[6], after the 8-byte instruction_pointer

	// maxShortJump is how far a conditional jump reaches (jt/jf are 8 bits).
	maxShortJump = 255
	// maxInstructions is BPF_MAXINSNS, the kernel's limit for one filter.
	maxInstructions = 4096
)

// Program returns the sandbox's seccomp filter as classic BPF, in the order
// described in policy.go. It is what Load installs, exposed so that tests
// and `execfarm doctor` can inspect or emulate it (golang.org/x/net/bpf's VM
// reads words big-endian: feed it seccomp_data with each 32-bit word stored
// big-endian to emulate the kernel).
//
// The policy is written for the x86_64 syscall ABI; on any other GOARCH
// Program returns an error wrapping ErrNotSupported. A malformed policy
// (unknown syscall name, program too long) is an error wrapping ErrPolicy.
func Program() ([]bpf.Instruction, error) {
	if runtime.GOARCH != "amd64" {
		return nil, fmt.Errorf("assemble seccomp program for GOARCH %s (policy is x86_64 only): %w", runtime.GOARCH, ErrNotSupported)
	}
	args, err := argumentFilters()
	if err != nil {
		return nil, err
	}
	body, err := policy().Assemble()
	if err != nil {
		return nil, fmt.Errorf("%w: assemble syscall lists: %w", ErrPolicy, err)
	}
	prog := concat(header(), args, body)
	if len(prog) > maxInstructions {
		return nil, fmt.Errorf("%w: program has %d instructions, the kernel accepts %d", ErrPolicy, len(prog), maxInstructions)
	}
	return prog, nil
}

// ret returns action.
func ret(action seccompbpf.Action) []bpf.Instruction {
	return []bpf.Instruction{bpf.RetConstant{Val: uint32(action)}}
}

// retErrno fails the syscall with errno (SECCOMP_RET_ERRNO | errno).
func retErrno(errno uint32) []bpf.Instruction {
	return ret(seccompbpf.ActionErrno | seccompbpf.Action(errno))
}

// ldArgLow loads the low 32 bits of syscall argument n (0-5) into A.
func ldArgLow(n uint32) []bpf.Instruction {
	return []bpf.Instruction{bpf.LoadAbsolute{Off: offArgs + 8*n, Size: 4}}
}

// ifEqual runs then when A == val and skips it otherwise; then must end in a
// return. Blocks nest: A is unchanged when then is skipped. Callers keep the
// enclosing program under maxShortJump instructions so the skip fits.
func ifEqual(val uint32, then []bpf.Instruction) []bpf.Instruction {
	out := make([]bpf.Instruction, 0, len(then)+1)
	out = append(out, bpf.JumpIf{Cond: bpf.JumpEqual, Val: val, SkipFalse: uint8(len(then))})
	return append(out, then...)
}

// concat joins instruction blocks.
func concat(blocks ...[]bpf.Instruction) []bpf.Instruction {
	var out []bpf.Instruction
	for _, b := range blocks {
		out = append(out, b...)
	}
	return out
}
