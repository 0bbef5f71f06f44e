# description: no file-change notification: every sandbox sees the same
#   read-only mounts (/usr, the goja binary, /etc/ld.so.cache), so a watch
#   there (inotify, or dnotify through fcntl F_NOTIFY) would see other
#   sandboxes open and run their programs, a side channel between
#   sandboxes. inotify answers ENOSYS (a kernel without inotify) and
#   F_NOTIFY EINVAL (a kernel without dnotify); the watch below, which the
#   program's own exec of /bin/true would trigger, is never set.
# runtime: python
# expect-state: COMPLETED
# expect-stdout-not-contains: ALLOWED
# expect-stdout-matches: (?m)^inotify_init1: blocked ENOSYS$
# expect-stdout-matches: (?m)^inotify_init: blocked ENOSYS$
# expect-stdout-matches: (?m)^inotify_add_watch: blocked ENOSYS$
# expect-stdout-matches: (?m)^fcntl F_NOTIFY /usr/bin: blocked EINVAL$
# expect-stdout-matches: (?m)^fcntl F_NOTIFY high bits: blocked EINVAL$
# expect-stdout-matches: (?m)^fcntl F_GETFD: ok$
import ctypes, errno, os, subprocess

libc = ctypes.CDLL(None, use_errno=True)
SYS_fcntl, SYS_inotify_init, SYS_inotify_add_watch, SYS_inotify_init1 = 72, 253, 254, 294
IN_OPEN, IN_ACCESS = 0x20, 0x01
F_GETFD, F_NOTIFY, DN_ACCESS, DN_MULTISHOT = 1, 1026, 0x1, 0x80000000

def probe(name, nr, *args, ok="ALLOWED"):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    e = ctypes.get_errno()
    print(f"{name}: " + (f"blocked {errno.errorcode.get(e, e)}" if r < 0 else ok), flush=True)
    return r

fd = probe("inotify_init1", SYS_inotify_init1, os.O_CLOEXEC)
probe("inotify_init", SYS_inotify_init)
path = ctypes.c_char_p(b"/usr/bin/true")
probe("inotify_add_watch", SYS_inotify_add_watch, fd, ctypes.cast(path, ctypes.c_void_p).value, IN_OPEN | IN_ACCESS)
if fd >= 0:
    subprocess.run(["/bin/true"])
    os.set_blocking(fd, False)
    try:
        print(f"inotify saw {len(os.read(fd, 4096))} bytes of events", flush=True)
    except BlockingIOError:
        print("inotify saw nothing", flush=True)
d = os.open("/usr/bin", os.O_RDONLY | os.O_DIRECTORY)
probe("fcntl F_NOTIFY /usr/bin", SYS_fcntl, d, F_NOTIFY, DN_ACCESS | DN_MULTISHOT)
probe("fcntl F_NOTIFY high bits", SYS_fcntl, d, (1 << 32) | F_NOTIFY, DN_ACCESS | DN_MULTISHOT)
probe("fcntl F_GETFD", SYS_fcntl, d, F_GETFD, ok="ok")
