# description: state left in /dev/shm, /tmp, the workspace, SysV shared
#   memory, message queues and semaphores by one execution is invisible
#   to the next (fresh tmpfs mounts and a fresh IPC namespace each time).
# runtime: shell
# expect-state: COMPLETED
# expect-stdout-contains: planted
echo "secret-{{MARKER}}" > /dev/shm/planted
echo "secret-{{MARKER}}" > /tmp/planted
echo "secret-{{MARKER}}" > /workspace/planted
ipcmk -M 4096 && ipcmk -Q && ipcmk -S 1 || exit 1
python3 -c '
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
shmid = libc.shmget(0x5848, 4096, 0o1666)  # IPC_CREAT | 0666, key 0x5848
addr = libc.shmat(shmid, None, 0)
ctypes.memmove(addr, b"secret-{{MARKER}}", len(b"secret-{{MARKER}}"))
print("shm id", shmid)
'
ipcs
echo planted
# ---- then ----
# runtime: shell
# expect-state: COMPLETED
# expect-stdout-not-contains: secret-{{MARKER}}
# expect-stdout-contains: /dev/shm empty
# expect-stdout-contains: /tmp empty
# expect-stdout-contains: /workspace empty
# expect-stdout-contains: sysv objects: 0
# expect-stdout-contains: key 0x5848: absent
[ -z "$(ls -A /dev/shm)" ] && echo "/dev/shm empty"
[ -z "$(ls -A /tmp)" ] && echo "/tmp empty"
[ -z "$(ls -A /workspace)" ] && echo "/workspace empty"
cat /dev/shm/* /tmp/* /workspace/* 2>/dev/null
echo "sysv objects: $(ipcs | grep -c '^0x')"
python3 -c '
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
shmid = libc.shmget(0x5848, 0, 0)
if shmid < 0:
    print("key 0x5848: absent")
else:
    print("key 0x5848: PRESENT", ctypes.string_at(libc.shmat(shmid, None, 0), 64))
'
