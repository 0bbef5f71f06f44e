# description: host-wide counts that move with other sandboxes' activity
#   are masked: /proc/cgroups (num_cgroups grows by one at each sandbox's
#   start and shrinks at its end), the pseudo-terminals in use
#   (/proc/sys/kernel/pty/nr), open files (/proc/sys/fs/file-nr), inodes
#   and dentries (inode-nr, inode-state, dentry-state) read as empty and
#   are /dev/null itself, since an unmasked count of 0 still reads "0".
# runtime: shell
# expect-state: COMPLETED
# expect-stdout-not-contains: READABLE
# expect-stdout-not-contains: NOT BOUND
# expect-stdout-matches: (?m)^/proc/cgroups: masked$
# expect-stdout-matches: (?m)^/proc/sys/kernel/pty/nr: masked$
# expect-stdout-matches: (?m)^/proc/sys/fs/file-nr: masked$
# expect-stdout-matches: (?m)^/proc/sys/fs/inode-nr: masked$
# expect-stdout-matches: (?m)^/proc/sys/fs/inode-state: masked$
# expect-stdout-matches: (?m)^/proc/sys/fs/dentry-state: masked$
for f in cgroups sys/kernel/pty/nr sys/fs/file-nr sys/fs/inode-nr sys/fs/inode-state sys/fs/dentry-state; do
  n=$(head -c 64 "/proc/$f" 2>/dev/null | wc -c)
  if [ "$n" -ne 0 ]; then echo "/proc/$f: READABLE ($n bytes)"
  elif [ -c "/proc/$f" ]; then echo "/proc/$f: masked"
  else echo "/proc/$f: NOT BOUND over by /dev/null"; fi
done
