# description: RLIMIT_FSIZE is the workspace size (here 8 MiB), soft and
#   hard: one file written past it in /tmp (a 64 MiB tmpfs) fails with
#   EFBIG at the limit, and the program cannot raise the hard limit.
# runtime: python
# limits: workspace_bytes=8Mi
# expect-state: COMPLETED
# expect-stdout-not-contains: ALLOWED
# expect-stdout-contains: RLIMIT_FSIZE: 8388608 8388608
# expect-stdout-matches: (?m)^write 9 MiB to /tmp/big: blocked EFBIG after 8388608 bytes$
# expect-stdout-matches: (?m)^raise hard limit: blocked
import errno, os, resource

soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
print(f"RLIMIT_FSIZE: {soft} {hard}", flush=True)
fd = os.open("/tmp/big", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
chunk, written = b"x" * (1 << 20), 0
try:
    # Python ignores SIGXFSZ, so the write past the limit fails with EFBIG.
    while written < 9 << 20:
        written += os.write(fd, chunk)
    print("write 9 MiB to /tmp/big: ALLOWED", flush=True)
except OSError as e:
    print(f"write 9 MiB to /tmp/big: blocked {errno.errorcode.get(e.errno, e.errno)} after {written} bytes", flush=True)
os.close(fd)
try:
    resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard * 2))
    print("raise hard limit: ALLOWED")
except (ValueError, OSError) as e:
    print(f"raise hard limit: blocked ({e})")
