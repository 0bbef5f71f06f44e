# description: TIOCSTI (pushing keystrokes into a terminal's input) and
#   TIOCLINUX are refused on a pseudo-terminal of the sandbox, also with
#   the upper 32 bits of the request set (the filter compares 32 bits).
# runtime: python
# expect-state: COMPLETED
# expect-stdout-not-contains: ALLOWED
# expect-stdout-matches: (?m)^TIOCSTI: blocked EPERM$
# expect-stdout-matches: (?m)^TIOCSTI high bits: blocked EPERM$
# expect-stdout-matches: (?m)^TIOCLINUX: blocked EPERM$
import ctypes, errno

libc = ctypes.CDLL(None, use_errno=True)
def probe(name, nr, *args):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    e = ctypes.get_errno()
    print(f"{name}: " + (f"blocked {errno.errorcode.get(e, e)}" if r < 0 else f"ALLOWED ({r})"), flush=True)

import os, pty
master, slave = pty.openpty()
ch = ctypes.c_char(b"x")
probe("TIOCSTI", 16, slave, 0x5412, ctypes.addressof(ch))
probe("TIOCSTI high bits", 16, slave, 0x1_0000_5412, ctypes.addressof(ch))
probe("TIOCLINUX", 16, slave, 0x541C, ctypes.addressof(ch))
