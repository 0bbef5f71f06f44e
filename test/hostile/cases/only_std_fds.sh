# description: the shell runtime's /bin/sh starts with exactly file
#   descriptors 0, 1 and 2: ls lists /proc/$$/fd, the shell's own fds,
#   straight to stdout (a pipe or redirection would add fds of its own).
# runtime: shell
# expect-state: COMPLETED
# expect-stdout-matches: \A0\n1\n2\n\z
ls /proc/$$/fd
