# description: a sandbox holds at most 16 pseudo-terminals (its devpts
#   instance's max): one more openpty fails with ENOSPC. Every devpts
#   instance but the host's first draws from one host-wide pool
#   (kernel.pty.max less kernel.pty.reserve, 3072 by default); with no
#   bound, one execution took all of it in a second, and every other
#   sandbox and container on the host got ENOSPC (red-team pass).
# runtime: python
# expect-state: COMPLETED
# expect-stdout-matches: (?m)^opened 16, then ENOSPC$
import errno, os

masters = []
while True:
    try:
        m, s = os.openpty()
    except OSError as e:
        print(f"opened {len(masters)}, then {errno.errorcode.get(e.errno, e.errno)}")
        break
    os.close(s)
    masters.append(m)
    if len(masters) > 4096:
        print("opened more than 4096")
        break
