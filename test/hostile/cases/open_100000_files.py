# description: opening 100 000 files stops at RLIMIT_NOFILE (1024 by
#   default) with EMFILE, the hard limit cannot be raised, and the
#   program ends cleanly.
# runtime: python
# limits: timeout_ms=20000
# expect-state: COMPLETED
# expect-reason: EXITED
# expect-stdout-contains: stopped by EMFILE
# expect-stdout-matches: opened 10[0-2][0-9] files
# expect-stdout-contains: raise hard limit: refused
import errno, os, resource

fds = []
try:
    for i in range(100000):
        fds.append(os.open("/dev/null", os.O_RDONLY))
    print("opened all 100000: NO LIMIT")
except OSError as e:
    print("stopped by", errno.errorcode.get(e.errno, e.errno))
print("opened", len(fds) + 3, "files")
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
try:
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard * 100, hard * 100))
    print("raise hard limit: ALLOWED")
except (ValueError, OSError) as e:
    print("raise hard limit: refused", e)
for fd in fds:
    os.close(fd)
