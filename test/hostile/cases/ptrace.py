# description: ptrace is refused: attaching to the parent (the sandbox's
#   init), to an own child, PTRACE_TRACEME, and process_vm_readv.
# runtime: python
# expect-state: COMPLETED
# expect-stdout-not-contains: ALLOWED
# expect-stdout-matches: (?m)^ptrace attach parent: blocked EPERM$
# expect-stdout-matches: (?m)^ptrace attach child: blocked EPERM$
# expect-stdout-matches: (?m)^ptrace traceme: blocked EPERM$
# expect-stdout-matches: (?m)^process_vm_readv: blocked EPERM$
import ctypes, errno, os, signal

libc = ctypes.CDLL(None, use_errno=True)
def probe(name, nr, *args):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    e = ctypes.get_errno()
    print(f"{name}: " + (f"blocked {errno.errorcode.get(e, e)}" if r < 0 else f"ALLOWED ({r})"), flush=True)
    return r

SYS_ptrace, SYS_process_vm_readv = 101, 310
PTRACE_TRACEME, PTRACE_ATTACH = 0, 16
probe("ptrace attach parent", SYS_ptrace, PTRACE_ATTACH, os.getppid(), 0, 0)
child = os.fork()
if child == 0:
    signal.pause()
    os._exit(0)
probe("ptrace attach child", SYS_ptrace, PTRACE_ATTACH, child, 0, 0)
os.kill(child, signal.SIGKILL)
os.waitpid(child, 0)
pid = os.fork()
if pid == 0:
    probe("ptrace traceme", SYS_ptrace, PTRACE_TRACEME, 0, 0, 0)
    os._exit(0)
os.waitpid(pid, 0)
probe("process_vm_readv", SYS_process_vm_readv, os.getppid(), 0, 0, 0, 0, 0)
