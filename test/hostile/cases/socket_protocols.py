# description: sockets are allowed by protocol, not only by family and
#   type: TCP and UDP over IPv4 and IPv6, unix sockets and route netlink
#   open; MPTCP, UDP-Lite, SCTP and ICMP (ping) sockets are refused, and
#   socketpair, which creates (and may load the module of) its family's
#   socket before it fails, accepts only AF_UNIX.
# runtime: python
# expect-state: COMPLETED
# expect-stdout-not-contains: ALLOWED
# expect-stdout-matches: (?m)^AF_INET stream 0: ok$
# expect-stdout-matches: (?m)^AF_INET stream TCP: ok$
# expect-stdout-matches: (?m)^AF_INET dgram 0: ok$
# expect-stdout-matches: (?m)^AF_INET dgram UDP: ok$
# expect-stdout-matches: (?m)^AF_INET6 stream TCP: ok$
# expect-stdout-matches: (?m)^AF_INET6 dgram UDP: ok$
# expect-stdout-matches: (?m)^AF_UNIX stream: ok$
# expect-stdout-matches: (?m)^AF_UNIX dgram: ok$
# expect-stdout-matches: (?m)^AF_UNIX seqpacket: ok$
# expect-stdout-matches: (?m)^AF_NETLINK route: ok$
# expect-stdout-matches: (?m)^socketpair AF_UNIX: ok$
# expect-stdout-matches: (?m)^AF_INET stream MPTCP: blocked EPERM$
# expect-stdout-matches: (?m)^AF_INET6 stream MPTCP: blocked EPERM$
# expect-stdout-matches: (?m)^AF_INET dgram UDP-Lite: blocked EPERM$
# expect-stdout-matches: (?m)^AF_INET6 dgram UDP-Lite: blocked EPERM$
# expect-stdout-matches: (?m)^AF_INET stream SCTP: blocked EPERM$
# expect-stdout-matches: (?m)^AF_INET dgram ICMP: blocked EPERM$
# expect-stdout-matches: (?m)^AF_INET6 dgram ICMPv6: blocked EPERM$
# expect-stdout-matches: (?m)^AF_INET stream MPTCP high bits: blocked EPERM$
# expect-stdout-matches: (?m)^socketpair AF_INET SCTP: blocked EPERM$
# expect-stdout-matches: (?m)^socketpair AF_INET stream: blocked EPERM$
# expect-stdout-matches: (?m)^socketpair AF_VSOCK: blocked EPERM$
import ctypes, errno, os

libc = ctypes.CDLL(None, use_errno=True)
SYS_socket, SYS_socketpair = 41, 53
AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_VSOCK = 1, 2, 10, 16, 40
SOCK_STREAM, SOCK_DGRAM, SOCK_RAW, SOCK_SEQPACKET = 1, 2, 3, 5
TCP, UDP, ICMP, ICMPV6, SCTP, UDPLITE, MPTCP = 6, 17, 1, 58, 132, 136, 262

def report(name, r):
    e = ctypes.get_errno()
    print(f"{name}: " + (f"blocked {errno.errorcode.get(e, e)}" if r < 0 else "ok"), flush=True)

def sock(name, family, typ, proto, allowed):
    r = libc.syscall(ctypes.c_long(SYS_socket), ctypes.c_long(family), ctypes.c_long(typ), ctypes.c_long(proto))
    if r >= 0:
        os.close(r)
        if not allowed:
            print(f"{name}: ALLOWED", flush=True)
            return
    report(name, r)

def pair(name, family, typ, proto, allowed):
    fds = (ctypes.c_int * 2)()
    r = libc.syscall(ctypes.c_long(SYS_socketpair), ctypes.c_long(family), ctypes.c_long(typ), ctypes.c_long(proto), fds)
    if r >= 0:
        os.close(fds[0]); os.close(fds[1])
        if not allowed:
            print(f"{name}: ALLOWED", flush=True)
            return
    report(name, r)

sock("AF_INET stream 0", AF_INET, SOCK_STREAM, 0, True)
sock("AF_INET stream TCP", AF_INET, SOCK_STREAM, TCP, True)
sock("AF_INET dgram 0", AF_INET, SOCK_DGRAM, 0, True)
sock("AF_INET dgram UDP", AF_INET, SOCK_DGRAM, UDP, True)
sock("AF_INET6 stream TCP", AF_INET6, SOCK_STREAM, TCP, True)
sock("AF_INET6 dgram UDP", AF_INET6, SOCK_DGRAM, UDP, True)
sock("AF_UNIX stream", AF_UNIX, SOCK_STREAM, 0, True)
sock("AF_UNIX dgram", AF_UNIX, SOCK_DGRAM, 0, True)
sock("AF_UNIX seqpacket", AF_UNIX, SOCK_SEQPACKET, 0, True)
sock("AF_NETLINK route", AF_NETLINK, SOCK_RAW, 0, True)
pair("socketpair AF_UNIX", AF_UNIX, SOCK_STREAM, 0, True)

sock("AF_INET stream MPTCP", AF_INET, SOCK_STREAM, MPTCP, False)
sock("AF_INET6 stream MPTCP", AF_INET6, SOCK_STREAM, MPTCP, False)
sock("AF_INET dgram UDP-Lite", AF_INET, SOCK_DGRAM, UDPLITE, False)
sock("AF_INET6 dgram UDP-Lite", AF_INET6, SOCK_DGRAM, UDPLITE, False)
sock("AF_INET stream SCTP", AF_INET, SOCK_STREAM, SCTP, False)
sock("AF_INET dgram ICMP", AF_INET, SOCK_DGRAM, ICMP, False)
sock("AF_INET6 dgram ICMPv6", AF_INET6, SOCK_DGRAM, ICMPV6, False)
# The kernel reads the protocol as a 32-bit int: bits above do not hide it.
sock("AF_INET stream MPTCP high bits", AF_INET, SOCK_STREAM, (1 << 32) | MPTCP, False)
pair("socketpair AF_INET SCTP", AF_INET, SOCK_STREAM, SCTP, False)
pair("socketpair AF_INET stream", AF_INET, SOCK_STREAM, 0, False)
pair("socketpair AF_VSOCK", AF_VSOCK, SOCK_STREAM, 0, False)
