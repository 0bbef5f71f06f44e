# description: a sandbox's open files are bounded by its memory, not by
#   its descriptors: a file mapped and then closed stays open without a
#   descriptor, so processes x RLIMIT_NOFILE (here 8 x 32) bounds nothing,
#   and each process holds files up to its mapping limit
#   (vm.max_map_count). Every open file's kernel object is charged to the
#   sandbox's memory cgroup, so the memory limit stops the sandbox long
#   before the host's file table (fs.file-max, which the supervisor keeps
#   above what every sandbox's memory could hold) refuses anyone a file:
#   no process ever sees ENFILE.
# runtime: python
# limits: memory_bytes=24Mi processes=8 file_descriptors=32 timeout_ms=60000
# expect-state: FAILED|COMPLETED
# expect-reason: MEMORY|EXITED
# expect-stdout-matches: (?m)^descriptors: at most 32 per process$
# expect-stdout-matches: (?m)^held 5000 files$
# expect-stdout-not-contains: ENFILE
import ctypes, errno, os, resource

libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
print(f"descriptors: at most {resource.getrlimit(resource.RLIMIT_NOFILE)[1]} per process", flush=True)
PROT_READ, MAP_PRIVATE, FAILED = 1, 2, ctypes.c_void_p(-1).value

def hold():
    path, op, close, mmap = "/usr/bin/python3", os.open, os.close, libc.mmap
    held = 0
    while True:
        try:
            fd = op(path, os.O_RDONLY)
        except OSError as e:
            return held, f"open: {errno.errorcode.get(e.errno, e.errno)}"
        if mmap(None, 4096, PROT_READ, MAP_PRIVATE, fd, 0) == FAILED:
            return held, f"mmap: {errno.errorcode.get(ctypes.get_errno())}"
        close(fd)
        held += 1
        if held == 5000:
            os.write(1, b"held 5000 files\n")  # one write: seven processes print

for _ in range(6):
    if os.fork() == 0:
        held, why = hold()
        os.write(1, f"child: {held} files, then {why}\n".encode())
        os._exit(0)
held, why = hold()
print(f"parent: {held} files, then {why}", flush=True)
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
