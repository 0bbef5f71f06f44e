# description: every thread of the worker (the sandbox's pid 1) has an
#   empty bounding, inheritable and ambient set and keeps at most
#   CAP_SETUID, CAP_SETGID and CAP_KILL (0xe0) permitted and effective;
#   the program's own sets are all empty. If the worker's threads cannot
#   be listed or read, that denial is itself acceptable and only the
#   program's own sets are checked.
# runtime: python
# expect-state: COMPLETED
# expect-stdout-not-contains: ALLOWED
# expect-stdout-matches: (?m)^worker threads: ([1-9][0-9]* checked|unreadable)$
# expect-stdout-matches: (?m)^self: all capability sets empty$
import glob

WORKER_KEEPS = (1 << 5) | (1 << 6) | (1 << 7)  # CAP_SETGID, CAP_SETUID, CAP_KILL

def caps(path):
    out = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k.startswith("Cap"):
                out[k] = int(v.strip(), 16)
    return out

checked = 0
try:
    tasks = sorted(glob.glob("/proc/1/task/*/status"))
    for st in tasks:
        c = caps(st)
        if len(c) != 5:
            raise OSError("no capability lines in " + st)
        for k in ("CapBnd", "CapInh", "CapAmb"):
            if c[k]:
                print(f"{st}: {k} {c[k]:016x} ALLOWED")
        for k in ("CapPrm", "CapEff"):
            if c[k] & ~WORKER_KEEPS:
                print(f"{st}: {k} {c[k]:016x} ALLOWED")
        checked += 1
    print(f"worker threads: {checked} checked" if checked else "worker threads: unreadable")
except OSError as e:
    print(f"worker threads: unreadable")

c = caps("/proc/self/status")
bad = {k: v for k, v in c.items() if v}
print("self: all capability sets empty" if len(c) == 5 and not bad else f"self: {bad} ALLOWED")
