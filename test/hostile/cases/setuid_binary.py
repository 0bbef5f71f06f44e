# description: setuid-root binaries (su, passwd, newgrp, chsh, mount) run
#   without gaining root: the program has no_new_privs and /usr is mounted
#   nosuid, so the started process's effective uid stays 1000. Each binary
#   runs on a pseudo-terminal; its credentials are read from /proc once it
#   has written something (the process is not reaped before that read).
# runtime: python
# limits: timeout_ms=20000
# expect-state: COMPLETED
# expect-stdout-matches: (?m)^NoNewPrivs:\s+1$
# expect-stdout-not-contains: euid=0
# expect-stdout-matches: (?m)^/usr/bin/su: setuid bit set, euid=1000 
# expect-stdout-matches: (?m)^/usr/bin/passwd: setuid bit set, euid=1000 
# expect-stdout-matches: (?m)^/usr/bin/mount: setuid bit set, euid=1000 
import os, pty, select, stat

print([l.strip() for l in open("/proc/self/status") if l.startswith("NoNewPrivs")][0])
for argv in (["/usr/bin/su", "root", "-c", "id"], ["/usr/bin/passwd"], ["/usr/bin/newgrp", "root"],
             ["/usr/bin/chsh"], ["/usr/bin/mount", "-t", "tmpfs", "x", "/tmp"]):
    suid = "setuid bit set" if os.stat(argv[0]).st_mode & stat.S_ISUID else "NO SETUID BIT"
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(argv[0], argv)
    out = b""
    if select.select([fd], [], [], 5)[0]:
        try:
            out = os.read(fd, 200)
        except OSError:
            pass
    uids = [l.split()[1:] for l in open(f"/proc/{pid}/status") if l.startswith("Uid:")][0]
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    print(f"{argv[0]}: {suid}, euid={uids[1]} (uids {' '.join(uids)}) said {out[:80]!r}")
