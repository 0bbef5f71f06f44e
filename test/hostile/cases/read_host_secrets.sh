# description: host secrets and the supervisor's files are out of reach:
#   /etc/shadow, the supervisor's socket, log, state directory and worker
#   binary at their host paths, the host's /root and /proc/1/root.
# runtime: shell
# expect-state: COMPLETED
# expect-stdout-not-contains: READABLE
# expect-stdout-contains: /etc/shadow: unreadable
# expect-stdout-contains: {{SUPERVISOR_SOCKET}}: unreadable
# expect-stdout-contains: {{SUPERVISOR_LOG}}: unreadable
# expect-stdout-contains: {{WORKER_BINARY}}: unreadable
# expect-stdout-contains: /proc/1/root/etc/shadow: unreadable
# expect-stdout-contains: state dir: absent
for f in /etc/shadow /etc/gshadow /root/.bash_history /root/.ssh/id_rsa \
         {{SUPERVISOR_SOCKET}} {{SUPERVISOR_LOG}} {{WORKER_BINARY}} \
         /proc/1/root/etc/shadow /proc/1/environ /proc/1/mem; do
  if head -c 64 "$f" >/dev/null 2>&1; then echo "$f: READABLE"; else echo "$f: unreadable"; fi
done
if [ -e {{STATE_DIR}} ]; then echo "state dir: READABLE"; ls -la {{STATE_DIR}}; else echo "state dir: absent"; fi
ls /.execfarm 2>&1
