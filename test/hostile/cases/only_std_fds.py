# description: the program starts with exactly file descriptors 0, 1 and 2
#   open: nothing of the worker (plugin socket, pipes, /dev/null copies)
#   leaks into it.
# runtime: python
# expect-state: COMPLETED
# expect-stdout-contains: open fds: 0 1 2
# expect-stdout-not-contains: LEAKED
import os

fds = []
for fd in range(65536):
    try:
        os.fstat(fd)
    except OSError:
        continue
    fds.append(fd)
print("open fds:", " ".join(map(str, fds)))
for fd in fds[3:]:
    print(f"LEAKED fd {fd} -> {os.readlink(f'/proc/self/fd/{fd}')}")
