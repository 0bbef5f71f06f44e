# description: a daemon that double-forks, calls setsid, closes its stdio
#   and outlives the program does not survive the execution: no host
#   process carries the case's marker afterwards.
# runtime: python
# limits: timeout_ms=10000
# expect-state: COMPLETED
# expect-reason: EXITED
# expect-stdout-contains: daemon running
import os

r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.close(r)
        devnull = os.open("/dev/null", os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.write(w, str(os.getpid()).encode())
        os.close(w)
        # $0 of the shell carries the marker into its host cmdline.
        os.execv("/bin/sh", ["sh", "-c", "while :; do sleep 1; done", "{{MARKER}}"])
    os._exit(0)
os.close(w)
pid = os.read(r, 64).decode()
os.wait()
print("daemon running as pid", pid)
