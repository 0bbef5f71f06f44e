# description: every runtime process starts as the OOM killer's first
#   choice (oom_score_adj 1000), before the worker (pid 1, which keeps
#   0): one program past its memory limit cannot take its sandbox's init
#   with it. A program cannot lower its own (Landlock lets it write no
#   /proc file; without Landlock, made dumpable, it could reach 0 but not
#   below: the fork server, root on the host, set that floor), nor touch
#   the worker's.
# runtime: python
# expect-state: COMPLETED
# expect-stdout-not-contains: ALLOWED
# expect-stdout-matches: (?m)^own 1000$
# expect-stdout-matches: (?m)^worker 0$
# expect-stdout-matches: (?m)^write own -1: blocked (EACCES|EPERM)$
# expect-stdout-matches: (?m)^write own -1000: blocked (EACCES|EPERM)$
# expect-stdout-matches: (?m)^write worker 1000: blocked (EACCES|EPERM)$
# expect-stdout-matches: (?m)^write own 0: (done|blocked (EACCES|EPERM))$
import ctypes, errno, os

def read(path):
    with open(path) as f:
        return f.read().strip()

print("own", read("/proc/self/oom_score_adj"), flush=True)
print("worker", read("/proc/1/oom_score_adj"), flush=True)
PR_SET_DUMPABLE = 4
ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)

def write(name, path, value, ok):
    try:
        with open(path, "w") as f:
            f.write(value)
        print(f"{name}: {ok}", flush=True)
    except OSError as e:
        print(f"{name}: blocked {errno.errorcode.get(e.errno, e.errno)}", flush=True)

write("write own -1", "/proc/self/oom_score_adj", "-1", "ALLOWED")
write("write own -1000", "/proc/self/oom_score_adj", "-1000", "ALLOWED")
write("write worker 1000", "/proc/1/oom_score_adj", "1000", "ALLOWED")
write("write own 0", "/proc/self/oom_score_adj", "0", "done")
