# description: name resolution fails: /etc/resolv.conf is empty and
#   `getent hosts example.com` finds nothing; localhost still resolves from
#   the sandbox's /etc/hosts.
# runtime: shell
# limits: timeout_ms=15000
# expect-state: COMPLETED
# expect-stdout-contains: resolv.conf bytes: 0
# expect-stdout-contains: example.com: unresolved
# expect-stdout-matches: (?m)^localhost: (127\.0\.0\.1|::1)$
echo "resolv.conf bytes: $(wc -c < /etc/resolv.conf)"
getent hosts example.com >/dev/null 2>&1 && echo "example.com: RESOLVED" || echo "example.com: unresolved"
echo "localhost: $(getent hosts localhost | cut -d' ' -f1 | head -1)"
