# description: the sandbox has no network: only a loopback interface; a
#   TEST-NET address (192.0.2.1, never routed) fails at once with
#   ENETUNREACH without a packet leaving, and the host's loopback listener
#   opened by the test is unreachable (the sandbox's 127.0.0.1 is its own).
# setup: host-tcp-listener
# runtime: python
# limits: timeout_ms=10000
# expect-state: COMPLETED
# expect-stdout-not-contains: CONNECTED
# expect-stdout-contains: 192.0.2.1:80: refused ENETUNREACH
# expect-stdout-contains: 127.0.0.1:{{HOST_TCP_PORT}}: refused ECONNREFUSED
# expect-stdout-matches: (?m)^interfaces: lo$
import errno, os, socket

print("interfaces:", " ".join(sorted(n for _, n in socket.if_nameindex())))
for host, port in [("192.0.2.1", 80), ("127.0.0.1", {{HOST_TCP_PORT}}), ("::ffff:192.0.2.1", 443)]:
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect((host, port))
        print(f"{host}:{port}: CONNECTED")
    except OSError as e:
        print(f"{host}:{port}: refused {errno.errorcode.get(e.errno, str(e.errno)) if e.errno else e}")
    finally:
        s.close()
# UDP: sendto an unroutable address must fail as well.
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    u.sendto(b"x", ("192.0.2.1", 53))
    print("udp 192.0.2.1:53: CONNECTED (sent)")
except OSError as e:
    print("udp 192.0.2.1:53: refused", errno.errorcode.get(e.errno, str(e.errno)))
