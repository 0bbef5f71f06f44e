# description: the program cannot signal the worker (the sandbox's pid 1,
#   another uid, and outside the program's landlock signal scope): even
#   the harmless kill(1, 0) is refused, as are SIGKILL and SIGSTOP. The
#   program is the leader of its own process group, and signalling its own
#   child still works.
# runtime: python
# expect-state: COMPLETED
# expect-stdout-not-contains: ALLOWED
# expect-stdout-matches: (?m)^kill\(1, 0\): blocked EPERM$
# expect-stdout-matches: (?m)^kill\(1, SIGKILL\): blocked EPERM$
# expect-stdout-matches: (?m)^kill\(1, SIGSTOP\): blocked EPERM$
# expect-stdout-contains: own child: signalled
# expect-stdout-contains: own process group: yes
import errno, os, signal

def probe(name, pid, sig):
    try:
        os.kill(pid, sig)
        print(f"{name}: ALLOWED", flush=True)
    except OSError as e:
        print(f"{name}: blocked {errno.errorcode.get(e.errno, e.errno)}", flush=True)

probe("kill(1, 0)", 1, 0)
probe("kill(1, SIGKILL)", 1, signal.SIGKILL)
probe("kill(1, SIGSTOP)", 1, signal.SIGSTOP)
child = os.fork()
if child == 0:
    signal.pause()
    os._exit(0)
os.kill(child, signal.SIGKILL)
_, status = os.waitpid(child, 0)
print("own child: signalled" if os.WIFSIGNALED(status) else "own child: not signalled")
# python3 -c is the runtime process itself: its own group, not the worker's.
print("own process group: " + ("yes" if os.getpgrp() == os.getpid() and os.getpgrp() != os.getpgid(1) else "no"))
