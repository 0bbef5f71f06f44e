# description: System V shared memory is bounded in the sandbox's IPC
#   namespace to /dev/shm's size (4.27 MiB in a 128 MiB sandbox), so
#   segments left with no process attached cannot fill the memory limit
#   and get the worker OOM-killed: a 120 MiB segment fails with EINVAL and
#   1 MiB segments, each filled and detached, stop with ENOSPC after 4 MiB
#   (with the kernel's defaults, 120 MiB of them were accepted and an
#   upload then OOM-killed the worker; session_sysv_shm_then_upload.py).
# runtime: python
# limits: memory_bytes=128Mi timeout_ms=20000
# expect-state: COMPLETED
# expect-stdout-contains: big segment: EINVAL
# expect-stdout-contains: segments: stopped by ENOSPC after 4 MiB
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
IPC_PRIVATE, IPC_CREAT, IPC_RMID = 0, 0o1000, 0

def err():
    return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))

if libc.shmget(IPC_PRIVATE, ctypes.c_size_t(120 << 20), IPC_CREAT | 0o600) < 0:
    print("big segment:", err())
else:
    print("big segment: CREATED 120 MiB")
n = 0
while n < 120:
    sid = libc.shmget(IPC_PRIVATE, ctypes.c_size_t(1 << 20), IPC_CREAT | 0o600)
    if sid < 0:
        print("segments: stopped by", err(), "after", n, "MiB")
        break
    addr = libc.shmat(sid, None, 0)
    if addr in (None, ctypes.c_void_p(-1).value):
        print("segments: stopped by", err(), "after", n, "MiB")
        break
    ctypes.memset(addr, 1, 1 << 20)  # charge every page
    libc.shmdt(ctypes.c_void_p(addr))  # nattch 0: the segment belongs to no process
    n += 1
else:
    print("segments: 120 MiB ACCEPTED")
