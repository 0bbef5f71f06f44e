# description: the supervisor's unix socket (a host path) cannot be
#   connected to from inside: neither by path nor through /proc.
# runtime: python
# expect-state: COMPLETED
# expect-stdout-not-contains: CONNECTED
# expect-stdout-matches: (?m)^{{SUPERVISOR_SOCKET}}: refused (ENOENT|EACCES|ECONNREFUSED)$
import errno, socket

for path in ["{{SUPERVISOR_SOCKET}}", "/proc/1/root{{SUPERVISOR_SOCKET}}", "/run/execfarm/execfarm.sock"]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
        print(path + ": CONNECTED")
    except OSError as e:
        print(path + ": refused " + errno.errorcode.get(e.errno, str(e.errno)))
    finally:
        s.close()
