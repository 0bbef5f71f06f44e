# description: loading kernel modules and kexec are refused: init_module,
#   finit_module, delete_module, kexec_load and kexec_file_load fail with
#   EPERM, whatever the arguments.
# runtime: python
# expect-state: COMPLETED
# expect-stdout-not-contains: ALLOWED
# expect-stdout-matches: (?m)^init_module: blocked EPERM$
# expect-stdout-matches: (?m)^finit_module: blocked EPERM$
# expect-stdout-matches: (?m)^delete_module: blocked EPERM$
# expect-stdout-matches: (?m)^kexec_load: blocked EPERM$
# expect-stdout-matches: (?m)^kexec_file_load: blocked EPERM$
import ctypes, errno

libc = ctypes.CDLL(None, use_errno=True)
def probe(name, nr, *args):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    e = ctypes.get_errno()
    print(f"{name}: " + (f"blocked {errno.errorcode.get(e, e)}" if r < 0 else f"ALLOWED ({r})"), flush=True)

name = ctypes.create_string_buffer(b"execfarm_hostile")
probe("init_module", 175, 0, 0, 0)
probe("finit_module", 313, 0, 0, 0)
probe("delete_module", 176, ctypes.addressof(name), 0)
probe("kexec_load", 246, 0, 0, 0, 0)
probe("kexec_file_load", 320, -1, -1, 0, 0, 0)
