# description: the legacy AIO family (io_setup & co.) is unavailable: its
#   contexts come from one host-wide pool, fs.aio-max-nr, with no
#   per-user or per-cgroup bound, so one sandbox could take all of it
#   and make io_setup fail for the host. Every call answers ENOSYS, as
#   on a kernel built without AIO, which callers take as "no AIO".
# runtime: python
# expect-state: COMPLETED
# expect-stdout-not-contains: ALLOWED
# expect-stdout-matches: (?m)^io_setup: blocked ENOSYS$
# expect-stdout-matches: (?m)^io_destroy: blocked ENOSYS$
# expect-stdout-matches: (?m)^io_submit: blocked ENOSYS$
# expect-stdout-matches: (?m)^io_getevents: blocked ENOSYS$
# expect-stdout-matches: (?m)^io_pgetevents: blocked ENOSYS$
# expect-stdout-matches: (?m)^io_cancel: blocked ENOSYS$
import ctypes, errno

libc = ctypes.CDLL(None, use_errno=True)
def probe(name, nr, *args):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    e = ctypes.get_errno()
    print(f"{name}: " + (f"blocked {errno.errorcode.get(e, e)}" if r < 0 else f"ALLOWED ({r})"), flush=True)
    return r

ctx = ctypes.c_ulong(0)
if probe("io_setup", 206, 1, ctypes.addressof(ctx)) == 0:
    print(f"io_setup context {ctx.value:#x}", flush=True)
probe("io_destroy", 207, ctx.value)
probe("io_submit", 209, 0, 0, 0)
probe("io_getevents", 208, 0, 0, 0, 0, 0)
probe("io_pgetevents", 333, 0, 0, 0, 0, 0, 0)
probe("io_cancel", 210, 0, 0, 0)
