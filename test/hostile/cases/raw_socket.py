# description: raw and packet sockets are refused: AF_INET SOCK_RAW (ICMP),
#   AF_INET6 SOCK_RAW, AF_PACKET, and AF_VSOCK.
# runtime: python
# expect-state: COMPLETED
# expect-stdout-not-contains: ALLOWED
# expect-stdout-matches: (?m)^AF_INET SOCK_RAW: blocked E(PERM|ACCES)$
# expect-stdout-matches: (?m)^AF_INET6 SOCK_RAW: blocked E(PERM|ACCES)$
# expect-stdout-matches: (?m)^AF_PACKET SOCK_RAW: blocked E(PERM|ACCES)$
# expect-stdout-matches: (?m)^AF_PACKET SOCK_DGRAM: blocked E(PERM|ACCES)$
# expect-stdout-matches: (?m)^AF_VSOCK: blocked E(PERM|ACCES|AFNOSUPPORT)$
import ctypes, errno

libc = ctypes.CDLL(None, use_errno=True)
def probe(name, nr, *args):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    e = ctypes.get_errno()
    print(f"{name}: " + (f"blocked {errno.errorcode.get(e, e)}" if r < 0 else f"ALLOWED ({r})"), flush=True)

SYS_socket = 41
AF_INET, AF_INET6, AF_PACKET, AF_VSOCK = 2, 10, 17, 40
SOCK_STREAM, SOCK_DGRAM, SOCK_RAW = 1, 2, 3
probe("AF_INET SOCK_RAW", SYS_socket, AF_INET, SOCK_RAW, 1)
probe("AF_INET6 SOCK_RAW", SYS_socket, AF_INET6, SOCK_RAW, 58)
probe("AF_PACKET SOCK_RAW", SYS_socket, AF_PACKET, SOCK_RAW, 0x0300)
probe("AF_PACKET SOCK_DGRAM", SYS_socket, AF_PACKET, SOCK_DGRAM, 0x0300)
probe("AF_VSOCK", SYS_socket, AF_VSOCK, SOCK_STREAM, 0)
