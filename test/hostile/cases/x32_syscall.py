# description: an x32-ABI system call (number | 0x40000000, same x86_64
#   arch value in seccomp_data) is refused rather than run.
# runtime: python
# expect-state: COMPLETED|FAILED
# expect-stdout-not-contains: ALLOWED
# expect-stdout-matches: (?m)^x32 getpid: blocked E[A-Z]+$|^$
import ctypes, errno

libc = ctypes.CDLL(None, use_errno=True)
print("calling x32 getpid", flush=True)
r = libc.syscall(ctypes.c_long(0x40000000 | 39))
e = ctypes.get_errno()
print("x32 getpid: " + (f"blocked {errno.errorcode.get(e, e)}" if r < 0 else f"ALLOWED ({r})"))
