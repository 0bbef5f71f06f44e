# description: the worker (pid 1) runs from a sealed memfd copy of its
#   binary and under another uid, so the program cannot look into it:
#   /proc/1/exe, /proc/1/root, /proc/1/cwd cannot be followed, and
#   /proc/1/environ, /proc/1/mem, /proc/1/maps, /proc/1/fd cannot be read.
#   Opening /proc/1/exe for writing (the CVE-2019-5736 path to the
#   worker's binary) fails too.
# runtime: python
# expect-state: COMPLETED
# expect-stdout-not-contains: ALLOWED
# expect-stdout-matches: (?m)^readlink /proc/1/exe: blocked (EACCES|EPERM)$
# expect-stdout-matches: (?m)^read /proc/1/environ: blocked (EACCES|EPERM)$
# expect-stdout-matches: (?m)^read /proc/1/mem: blocked (EACCES|EPERM)$
# expect-stdout-matches: (?m)^list /proc/1/fd: blocked (EACCES|EPERM)$
# expect-stdout-matches: (?m)^write /proc/1/exe: blocked (EACCES|EPERM|ETXTBSY)$
import errno, os

def probe(name, fn):
    try:
        r = fn()
        print(f"{name}: ALLOWED ({r!r:.60})", flush=True)
    except OSError as e:
        print(f"{name}: blocked {errno.errorcode.get(e.errno, e.errno)}", flush=True)

def read(path):
    with open(path, "rb") as f:
        return f.read(64)

for link in ("exe", "root", "cwd"):
    probe(f"readlink /proc/1/{link}", lambda: os.readlink(f"/proc/1/{link}"))
for name in ("environ", "mem", "maps", "auxv", "stack"):
    probe(f"read /proc/1/{name}", lambda: read(f"/proc/1/{name}"))
probe("list /proc/1/fd", lambda: os.listdir("/proc/1/fd"))
probe("list /proc/1/root", lambda: os.listdir("/proc/1/root/"))
probe("write /proc/1/exe", lambda: os.open("/proc/1/exe", os.O_WRONLY))
