# description: perf_event_open(2) is refused, for the own process and for
#   every CPU.
# runtime: python
# expect-state: COMPLETED
# expect-stdout-not-contains: ALLOWED
# expect-stdout-matches: (?m)^perf_event_open self: blocked EPERM$
# expect-stdout-matches: (?m)^perf_event_open cpu 0: blocked EPERM$
import ctypes, errno

libc = ctypes.CDLL(None, use_errno=True)
def probe(name, nr, *args):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    e = ctypes.get_errno()
    print(f"{name}: " + (f"blocked {errno.errorcode.get(e, e)}" if r < 0 else f"ALLOWED ({r})"), flush=True)

# struct perf_event_attr: type PERF_TYPE_SOFTWARE, size 128, config CPU_CLOCK.
attr = (ctypes.c_uint32 * 32)(1, 128, 0, 0)
probe("perf_event_open self", 298, ctypes.addressof(attr), 0, -1, -1, 0)
probe("perf_event_open cpu 0", 298, ctypes.addressof(attr), -1, 0, -1, 0)
