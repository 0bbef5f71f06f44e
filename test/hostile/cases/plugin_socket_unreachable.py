# description: no unix socket of the sandbox's network namespace that the
#   program did not make can be connected to: the worker's go-plugin
#   socket, listed in /proc/net/unix under its host path in the state
#   directory, does not exist at that path inside (it was bound before
#   pivot_root), and abstract sockets are out of the program's landlock
#   scope. At least the plugin socket must be listed, so that the probe
#   ran.
# runtime: python
# expect-state: COMPLETED
# expect-stdout-not-contains: CONNECTED
# expect-stdout-matches: (?m)^listening unix sockets: [1-9][0-9]*$
# expect-stdout-matches: (?m)^{{STATE_DIR}}/sb/sb-[0-9a-f]+/\S*plugin\S*: refused (ENOENT|EACCES|ECONNREFUSED)$
import errno, socket

paths = []
with open("/proc/net/unix") as f:
    next(f)
    for line in f:
        fields = line.split()
        # Num RefCount Protocol Flags Type St Inode [Path]; flags 00010000 = listening
        if len(fields) >= 8 and int(fields[3], 16) & 0x10000:
            paths.append(fields[7])
print(f"listening unix sockets: {len(paths)}", flush=True)
for p in paths:
    addr = "\0" + p[1:] if p.startswith("@") else p
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(addr)
        print(f"{p}: CONNECTED", flush=True)
    except OSError as e:
        print(f"{p}: refused {errno.errorcode.get(e.errno, e.errno)}", flush=True)
    finally:
        s.close()
