# description: the hardening leaves the program its ordinary devices:
#   writing to /dev/stdout, /dev/stderr and /dev/null works, /dev/full
#   fails with ENOSPC, /dev/zero and /dev/urandom read; landlock grants
#   write to the /dev nodes, and /dev holds nothing else of the host
#   (no disks, /dev/mem, /dev/kmsg, /dev/tty...); /dev/mqueue is the
#   sandbox's own IPC namespace's message queues.
# runtime: shell
# expect-state: COMPLETED
# expect-stdout-contains: via /dev/stdout
# expect-stderr-contains: via /dev/stderr
# expect-stdout-contains: /dev/null: written
# expect-stdout-contains: /dev/full: refused
# expect-stdout-contains: /dev/zero: 16 bytes
# expect-stdout-contains: /dev/urandom: 16 bytes
# expect-stdout-matches: (?m)^/dev: fd full mqueue null ptmx pts random shm stderr stdin stdout urandom zero $
echo "via /dev/stdout" > /dev/stdout
echo "via /dev/stderr" > /dev/stderr
(echo x > /dev/null) 2>/dev/null && echo "/dev/null: written" || echo "/dev/null: refused"
(echo x > /dev/full) 2>/dev/null && echo "/dev/full: WRITTEN" || echo "/dev/full: refused"
echo "/dev/zero: $(head -c 16 /dev/zero | wc -c) bytes"
echo "/dev/urandom: $(head -c 16 /dev/urandom | wc -c) bytes"
echo "/dev: $(ls -A /dev | sort | tr '\n' ' ')"
