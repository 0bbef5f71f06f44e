# description: the sandbox's user namespace maps its ids 0..65535 to a
#   private range of host ids far above every host user (the suite's
#   window starts at 3·2^30; serve's at 2^30): uid and gid 0 inside are an
#   unprivileged host id, and no other id (host root in particular) is
#   mapped. The program itself is uid 1000.
# runtime: shell
# expect-state: COMPLETED
# expect-stdout-matches: (?m)^uid_map lines: 1$
# expect-stdout-matches: (?m)^gid_map lines: 1$
# expect-stdout-matches: (?m)^uid_map:\s+0\s+(10[7-9][0-9]{7}|1[1-9][0-9]{8}|[2-4][0-9]{9})\s+65536$
# expect-stdout-matches: (?m)^gid_map:\s+0\s+(10[7-9][0-9]{7}|1[1-9][0-9]{8}|[2-4][0-9]{9})\s+65536$
# expect-stdout-contains: ids: 1000 1000
echo "uid_map lines: $(wc -l < /proc/self/uid_map)"
echo "gid_map lines: $(wc -l < /proc/self/gid_map)"
echo "uid_map: $(cat /proc/self/uid_map)"
echo "gid_map: $(cat /proc/self/gid_map)"
echo "ids: $(id -u) $(id -g)"
