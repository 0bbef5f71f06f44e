# description: no new namespaces: unshare, clone with CLONE_NEW* flags and
#   setns are refused, clone3 is ENOSYS (so libc falls back to clone), and
#   unshare(1) fails.
# runtime: python
# expect-state: COMPLETED
# expect-stdout-not-contains: ALLOWED
# expect-stdout-matches: (?m)^unshare CLONE_NEWUSER: blocked EPERM$
# expect-stdout-matches: (?m)^unshare CLONE_NEWNS: blocked EPERM$
# expect-stdout-matches: (?m)^unshare CLONE_NEWNET: blocked EPERM$
# expect-stdout-matches: (?m)^clone CLONE_NEWUSER: blocked EPERM$
# expect-stdout-matches: (?m)^clone CLONE_NEWPID: blocked EPERM$
# expect-stdout-matches: (?m)^setns: blocked E(PERM|BADF)$
# expect-stdout-matches: (?m)^clone3: blocked ENOSYS$
# expect-stdout-contains: unshare(1): failed
import ctypes, errno, os, subprocess

libc = ctypes.CDLL(None, use_errno=True)
def probe(name, nr, *args):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    e = ctypes.get_errno()
    if r == 0 and nr == SYS_clone:
        os._exit(0)  # a child created in a new namespace: it must not exist
    print(f"{name}: " + (f"blocked {errno.errorcode.get(e, e)}" if r < 0 else f"ALLOWED ({r})"), flush=True)

SYS_clone, SYS_unshare, SYS_setns, SYS_clone3 = 56, 272, 308, 435
NEWNS, NEWUSER, NEWPID, NEWNET, SIGCHLD = 0x20000, 0x10000000, 0x20000000, 0x40000000, 17
probe("unshare CLONE_NEWUSER", SYS_unshare, NEWUSER)
probe("unshare CLONE_NEWNS", SYS_unshare, NEWNS)
probe("unshare CLONE_NEWNET", SYS_unshare, NEWNET)
probe("clone CLONE_NEWUSER", SYS_clone, NEWUSER | SIGCHLD, 0, 0, 0, 0)
probe("clone CLONE_NEWPID", SYS_clone, NEWPID | SIGCHLD, 0, 0, 0, 0)
fd = os.open("/proc/self/ns/net", os.O_RDONLY)
probe("setns", SYS_setns, fd, 0)
probe("clone3", SYS_clone3, 0, 0)
r = subprocess.run(["unshare", "-U", "-r", "id"], capture_output=True, text=True)
print("unshare(1):", "failed" if r.returncode != 0 else "ALLOWED " + r.stdout.strip(), r.stderr.strip())
