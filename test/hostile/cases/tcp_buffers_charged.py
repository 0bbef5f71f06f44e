# description: TCP socket buffers count against the sandbox's memory: data
#   queued in loopback TCP connections that nobody reads stays within the
#   sandbox's memory limit (cgroup v1: memory.kmem.tcp.limit_in_bytes is
#   the memory limit, since v1 does not charge socket buffers to
#   memory.usage_in_bytes; v2 charges them to memory.max), instead of
#   taking host memory the limit does not see (unbounded, this queued
#   about four times the limit). The kernel always admits one segment
#   (up to 64 KiB) per socket beyond any limit (sk_forced_mem_schedule),
#   so the bound is the limit plus 64 KiB per connection. On v2 the
#   sandbox may instead end in an OOM kill (reason MEMORY): bounded too.
# runtime: python
# limits: memory_bytes=64Mi timeout_ms=20000
# expect-state: COMPLETED|FAILED
# expect-reason: EXITED|MEMORY
# expect-stdout-matches: (?m)^queued: \d+ MiB in \d+ connections$
# expect-stdout-not-contains: UNBOUNDED
import socket

LIMIT = 64 << 20
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(512)
chunk = b"x" * 65536
total, conns = 0, []
while total < 4 * LIMIT and len(conns) < 64:
    c = socket.socket()
    try:
        c.connect(srv.getsockname())
    except OSError:
        break
    conns.append((c, srv.accept()[0]))  # the accepted end never reads
    c.setblocking(False)
    sent = 0
    while True:
        try:
            sent += c.send(chunk)
        except OSError:  # EAGAIN: send buffer and peer's receive buffer full
            break
    total += sent
    # After each connection: on cgroup v2, where socket buffers are charged
    # to memory.max itself, the OOM kill can end the program first.
    print("queued:", total >> 20, "MiB in", len(conns), "connections", flush=True)
if total > LIMIT + len(conns) * 65536 + (4 << 20):
    print("UNBOUNDED: queued more than the memory limit in socket buffers")
