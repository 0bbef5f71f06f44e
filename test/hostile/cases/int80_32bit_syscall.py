# description: a 32-bit system call through `int 0x80` (the i386 ABI, a
#   classic way around a filter written for x86_64 numbers) gets nowhere:
#   the seccomp filter kills on a non-native arch, so the child making it
#   dies of SIGSYS. A kernel that delivers no `int 0x80` from a 64-bit
#   process (ia32 emulation off, or a paravirtualised guest such as the
#   dev VM) faults it with SIGSEGV before any filter sees it; the case
#   accepts that, says which it saw, and the filter's arch check is
#   `isolation/seccomp` TestProgramTable's. The machine code (mov eax, 20
#   [i386 getpid]; int 0x80; ret) runs in a forked child from an
#   anonymous executable mapping made with Python's mmap and ctypes.
# runtime: python
# expect-state: COMPLETED
# expect-stdout-matches: (?m)^int 0x80: (killed by SIGSYS|killed by SIGSEGV, not delivered by this kernel)$
# expect-stdout-not-contains: SURVIVED
import ctypes, mmap, os, signal

code = bytes([0xB8, 0x14, 0x00, 0x00, 0x00,  # mov eax, 20
              0xCD, 0x80,                    # int 0x80
              0xC3])                         # ret
pid = os.fork()
if pid == 0:
    buf = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    buf.write(code)
    fn = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(buf)))
    print("SURVIVED: int 0x80 returned", fn(), flush=True)
    os._exit(0)
_, status = os.waitpid(pid, 0)
if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGSYS:
    print("int 0x80: killed by SIGSYS")
elif os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGSEGV:
    print("int 0x80: killed by SIGSEGV, not delivered by this kernel")
else:
    print("int 0x80: child ended with status", status)
