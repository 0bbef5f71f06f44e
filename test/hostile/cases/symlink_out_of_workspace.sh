# description: symlinks planted in the workspace that point out of it
#   resolve inside the sandbox's own root: the host marker file (a
#   world-readable file in the host's /var/tmp) is never reached, and
#   /etc/passwd through a link is the sandbox's own.
# setup: host-marker-file
# runtime: shell
# expect-state: COMPLETED
# expect-stdout-contains: marker via link: unreadable
# expect-stdout-contains: marker via ..: unreadable
# expect-stdout-contains: marker via /proc/self/root: unreadable
# expect-stdout-contains: sandbox:x:1000
# expect-stdout-not-contains: daemon:x:
cd /workspace
ln -s {{HOST_MARKER_PATH}} marker
ln -s ../../../../../../..{{HOST_MARKER_PATH}} marker-dots
ln -s /etc/passwd passwd
cat marker 2>/dev/null || echo "marker via link: unreadable"
cat marker-dots 2>/dev/null || echo "marker via ..: unreadable"
cat /proc/self/root{{HOST_MARKER_PATH}} 2>/dev/null || echo "marker via /proc/self/root: unreadable"
cat /proc/1/root{{HOST_MARKER_PATH}} 2>/dev/null || echo "marker via /proc/1/root: unreadable"
cat passwd
