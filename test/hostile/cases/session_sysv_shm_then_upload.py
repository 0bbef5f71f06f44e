# description: the red-team pass's attack on a session sandbox: 120 MiB
#   of System V shared memory segments, each filled and left with no
#   process attached, then an 8 MiB upload, in a 128 MiB sandbox. The
#   segments stop with ENOSPC at /dev/shm's size (4 MiB), so the upload
#   succeeds and the worker lives to run the next exec; with the kernel's
#   defaults all 120 MiB were accepted and the upload OOM-killed the
#   worker, ending the sandbox.
# session: true
# limits: memory_bytes=128Mi timeout_ms=20000
# runtime: python
# expect-state: COMPLETED
# expect-stdout-contains: segments: stopped by ENOSPC after 4 MiB
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
IPC_PRIVATE, IPC_CREAT = 0, 0o1000
n = 0
while n < 120:
    sid = libc.shmget(IPC_PRIVATE, ctypes.c_size_t(1 << 20), IPC_CREAT | 0o600)
    if sid < 0:
        print("segments: stopped by", errno.errorcode.get(ctypes.get_errno()), "after", n, "MiB")
        break
    addr = libc.shmat(sid, None, 0)
    ctypes.memset(addr, 1, 1 << 20)  # charge every page
    libc.shmdt(ctypes.c_void_p(addr))  # nattch 0: the segment belongs to no process
    n += 1
else:
    print("segments: 120 MiB ACCEPTED")
# --- then ---
# file: upload-zeros big.bin 8Mi
# expect-file: ok
# --- then ---
# runtime: shell
# expect-state: COMPLETED
# expect-stdout-contains: alive
echo alive
