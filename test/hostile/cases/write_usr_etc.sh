# description: /usr, /etc and the root are read-only: creating, changing or
#   replacing system files fails.
# runtime: shell
# expect-state: COMPLETED
# expect-stdout-not-contains: WRITABLE
# expect-stdout-contains: /usr/execfarm-hostile: read-only
# expect-stdout-contains: /etc/passwd: read-only
# expect-stdout-contains: /bin/sh: read-only
for f in /usr/execfarm-hostile /usr/bin/execfarm-hostile /etc/execfarm-hostile \
         /etc/passwd /etc/ld.so.cache /bin/sh /execfarm-hostile /lib/execfarm-hostile; do
  if (echo owned >> "$f") 2>/dev/null; then echo "$f: WRITABLE"; else echo "$f: read-only"; fi
done
mkdir /usr/x 2>/dev/null && echo "/usr: WRITABLE (mkdir)"
rm -f /etc/hosts 2>/dev/null && [ ! -e /etc/hosts ] && echo "/etc/hosts: WRITABLE (rm)"
mv /usr/bin/env /usr/bin/env.x 2>/dev/null && echo "/usr/bin/env: WRITABLE (mv)"
true
