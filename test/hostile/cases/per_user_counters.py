# description: what the kernel counts per user (queued signals, POSIX
#   message queue bytes, inotify, processes) is charged to the sandbox's
#   own identity and bounded per sandbox. Its user namespace is owned by
#   its own root (its own host uid), not by host root: the kernel charges
#   a namespace's use, at the level above it, to the namespace's owner,
#   and with host root as owner one sandbox queued ~96 000 signals on
#   host root's account until sigqueue failed for the host. Queued
#   signals stop at RLIMIT_SIGPENDING (4096) with EAGAIN, message queues
#   at RLIMIT_MSGQUEUE (819200 bytes) with EMFILE (or are refused by
#   landlock, EACCES, where the kernel has it).
# runtime: python
# expect-state: COMPLETED
# expect-stdout-matches: (?m)^user namespace owner: 0$
# expect-stdout-matches: (?m)^RLIMIT_SIGPENDING: 4096 4096$
# expect-stdout-matches: (?m)^RLIMIT_MSGQUEUE: 819200 819200$
# expect-stdout-matches: (?m)^queued signals: 4096, then EAGAIN$
# expect-stdout-matches: (?m)^SigQ: 4096/4096$
# expect-stdout-matches: (?m)^message queues: [0-9], then E(MFILE|ACCES)$
import ctypes, errno, os, resource, signal

libc = ctypes.CDLL(None, use_errno=True)
NS_GET_OWNER_UID = 0xb704

# Seen from inside, the owner is uid 0 (the sandbox's root, its own host
# uid); host root is unmapped here and would read as 65534.
fd = os.open("/proc/self/ns/user", os.O_RDONLY)
owner = ctypes.c_uint32(0xffffffff)
if libc.ioctl(fd, NS_GET_OWNER_UID, ctypes.byref(owner)) < 0:
    print("user namespace owner: ioctl failed", errno.errorcode.get(ctypes.get_errno()))
else:
    print(f"user namespace owner: {owner.value}", flush=True)
os.close(fd)

for name in ("RLIMIT_SIGPENDING", "RLIMIT_MSGQUEUE"):
    soft, hard = resource.getrlimit(getattr(resource, name))
    print(f"{name}: {soft} {hard}", flush=True)

# Queue real-time signals to ourselves (blocked, so they stay queued).
sig = signal.SIGRTMIN
signal.pthread_sigmask(signal.SIG_BLOCK, [sig])
n, err = 0, 0
while n < 1 << 20:
    if libc.sigqueue(os.getpid(), sig, ctypes.c_void_p(0)) < 0:
        err = ctypes.get_errno()
        break
    n += 1
print(f"queued signals: {n}, then {errno.errorcode.get(err, err)}", flush=True)
with open("/proc/self/status") as f:
    print(next(l.strip().replace("\t", " ") for l in f if l.startswith("SigQ:")), flush=True)

# POSIX message queues (default 10 messages of 8 KiB each) until the
# per-uid byte limit refuses one; where landlock is active, creating one
# in the kernel's mqueue file system is refused (EACCES) from the start.
libc.mq_open.restype = ctypes.c_int
n, err = 0, 0
while n < 256:
    q = libc.mq_open(f"/q{n}".encode(), os.O_CREAT | os.O_RDWR, 0o600, None)
    if q < 0:
        err = ctypes.get_errno()
        break
    n += 1
print(f"message queues: {n}, then {errno.errorcode.get(err, err)}", flush=True)
