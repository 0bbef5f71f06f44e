# description: mounting is refused: mount(8) of a tmpfs, a bind mount of /
#   and the mount(2) system call directly.
# runtime: shell
# expect-state: COMPLETED
# expect-stdout-not-contains: ALLOWED
# expect-stdout-contains: mount tmpfs: refused
# expect-stdout-contains: mount --bind: refused
# expect-stdout-matches: (?m)^mount\(2\): blocked EPERM$
mkdir -p /tmp/m
mount -t tmpfs none /tmp/m 2>/dev/null && echo "mount tmpfs: ALLOWED" || echo "mount tmpfs: refused"
mount --bind / /tmp/m 2>/dev/null && echo "mount --bind: ALLOWED" || echo "mount --bind: refused"
python3 -c '
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
r = libc.mount(b"none", b"/tmp/m", b"tmpfs", 0, None)
e = ctypes.get_errno()
print("mount(2): " + ("blocked " + errno.errorcode.get(e, str(e)) if r < 0 else "ALLOWED"))
'
