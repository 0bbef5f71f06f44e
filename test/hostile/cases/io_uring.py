# description: io_uring is unavailable: io_uring_setup, io_uring_enter and
#   io_uring_register fail (ENOSYS or EPERM), so no ring bypasses seccomp.
# runtime: python
# expect-state: COMPLETED
# expect-stdout-not-contains: ALLOWED
# expect-stdout-matches: (?m)^io_uring_setup: blocked E(NOSYS|PERM)$
# expect-stdout-matches: (?m)^io_uring_enter: blocked E(NOSYS|PERM)$
# expect-stdout-matches: (?m)^io_uring_register: blocked E(NOSYS|PERM)$
import ctypes, errno

libc = ctypes.CDLL(None, use_errno=True)
def probe(name, nr, *args):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    e = ctypes.get_errno()
    print(f"{name}: " + (f"blocked {errno.errorcode.get(e, e)}" if r < 0 else f"ALLOWED ({r})"), flush=True)

params = (ctypes.c_uint32 * 30)()
probe("io_uring_setup", 425, 8, ctypes.addressof(params))
probe("io_uring_enter", 426, 0, 1, 0, 0, 0, 0)
probe("io_uring_register", 427, 0, 0, 0, 0)
