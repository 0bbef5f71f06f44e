# description: the goja runtime binary, bound at /.execfarm/goja, cannot
#   be written, truncated, replaced, removed or have its mode changed from
#   inside (a read-only bind of the root-owned host binary); the worker
#   binary is not in the sandbox at all.
# runtime: shell
# expect-state: COMPLETED
# expect-stdout-not-contains: WRITABLE
# expect-stdout-contains: /.execfarm/goja: present
# expect-stdout-contains: /.execfarm/worker: absent
# expect-stdout-contains: append: refused
# expect-stdout-contains: truncate: refused
# expect-stdout-contains: replace: refused
# expect-stdout-contains: remove: refused
# expect-stdout-contains: chmod: refused
[ -e /.execfarm/worker ] && echo "/.execfarm/worker: present" || echo "/.execfarm/worker: absent"
w=/.execfarm/goja
[ -x "$w" ] && echo "$w: present" || echo "$w: missing"
(echo owned >> "$w") 2>/dev/null && echo "append: WRITABLE" || echo "append: refused"
truncate -s 0 "$w" 2>/dev/null && echo "truncate: WRITABLE" || echo "truncate: refused"
(echo '#!/bin/sh' > /tmp/w && chmod +x /tmp/w && mv -f /tmp/w "$w") 2>/dev/null && echo "replace: WRITABLE" || echo "replace: refused"
rm -f "$w" 2>/dev/null && [ ! -e "$w" ] && echo "remove: WRITABLE" || echo "remove: refused"
chmod 777 "$w" 2>/dev/null && echo "chmod: WRITABLE" || echo "chmod: refused"
