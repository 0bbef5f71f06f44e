# description: userfaultfd(2) (a classic kernel-exploit helper) is refused,
#   and so is /dev/userfaultfd (absent).
# runtime: python
# expect-state: COMPLETED
# expect-stdout-not-contains: ALLOWED
# expect-stdout-matches: (?m)^userfaultfd: blocked EPERM$
# expect-stdout-matches: (?m)^userfaultfd UFFD_USER_MODE_ONLY: blocked EPERM$
# expect-stdout-contains: /dev/userfaultfd: absent
import ctypes, errno

libc = ctypes.CDLL(None, use_errno=True)
def probe(name, nr, *args):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    e = ctypes.get_errno()
    print(f"{name}: " + (f"blocked {errno.errorcode.get(e, e)}" if r < 0 else f"ALLOWED ({r})"), flush=True)

import os
probe("userfaultfd", 323, os.O_CLOEXEC)
probe("userfaultfd UFFD_USER_MODE_ONLY", 323, os.O_CLOEXEC | 1)
print("/dev/userfaultfd:", "PRESENT" if os.path.exists("/dev/userfaultfd") else "absent")
