# description: a python program holds no capability, also in its bounding
#   set, and cannot raise any through capset or prctl.
# runtime: python
# expect-state: COMPLETED
# expect-stdout-matches: (?m)^CapEff:\s+0000000000000000$
# expect-stdout-matches: (?m)^CapPrm:\s+0000000000000000$
# expect-stdout-matches: (?m)^CapBnd:\s+0000000000000000$
# expect-stdout-matches: (?m)^CapAmb:\s+0000000000000000$
# expect-stdout-matches: (?m)^PR_CAP_AMBIENT_RAISE: blocked E(PERM|INVAL)$
import ctypes, errno

for line in open("/proc/self/status"):
    if line.startswith("Cap"):
        print(line.rstrip())
libc = ctypes.CDLL(None, use_errno=True)
r = libc.prctl(47, 2, 21, 0, 0)  # PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SYS_ADMIN
e = ctypes.get_errno()
print("PR_CAP_AMBIENT_RAISE: " + (f"blocked {errno.errorcode.get(e, e)}" if r < 0 else "ALLOWED"))
