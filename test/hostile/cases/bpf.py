# description: bpf(2) is refused: no program load, no map creation.
# runtime: python
# expect-state: COMPLETED
# expect-stdout-not-contains: ALLOWED
# expect-stdout-matches: (?m)^bpf BPF_MAP_CREATE: blocked EPERM$
# expect-stdout-matches: (?m)^bpf BPF_PROG_LOAD: blocked EPERM$
import ctypes, errno

libc = ctypes.CDLL(None, use_errno=True)
def probe(name, nr, *args):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    e = ctypes.get_errno()
    print(f"{name}: " + (f"blocked {errno.errorcode.get(e, e)}" if r < 0 else f"ALLOWED ({r})"), flush=True)

# union bpf_attr for BPF_MAP_CREATE: array map, key 4, value 4, 1 entry.
attr = (ctypes.c_uint32 * 32)(2, 4, 4, 1)
probe("bpf BPF_MAP_CREATE", 321, 0, ctypes.addressof(attr), ctypes.sizeof(attr))
probe("bpf BPF_PROG_LOAD", 321, 5, ctypes.addressof(attr), ctypes.sizeof(attr))
