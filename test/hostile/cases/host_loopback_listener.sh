# description: a TCP port the test opened on the host's 127.0.0.1 cannot be
#   reached from the sandbox, whatever tool tries (shell /dev/tcp-less dash,
#   python, perl); the listener accepts no connection.
# setup: host-tcp-listener
# runtime: shell
# limits: timeout_ms=15000
# expect-state: COMPLETED
# expect-stdout-not-contains: CONNECTED
# expect-stdout-contains: python: refused
# expect-stdout-contains: perl: refused
python3 -c '
import socket, sys
s = socket.socket(); s.settimeout(3)
try:
    s.connect(("127.0.0.1", {{HOST_TCP_PORT}})); print("python: CONNECTED")
except OSError as e:
    print("python: refused", e)
'
perl -MIO::Socket::INET -e '
my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1", PeerPort => {{HOST_TCP_PORT}}, Timeout => 3);
print $s ? "perl: CONNECTED\n" : "perl: refused $!\n";
'
