# description: file locks stay usable where programs keep their files,
#   and give no hold on the host's files. flock and POSIX locks act on
#   the inode, which every sandbox shares with the host through the
#   read-only binds (/usr, /etc/ld.so.cache, the /dev nodes): a lock
#   there is a covert channel between sandboxes that SECURITY.md lists,
#   left open because seccomp sees only the descriptor, Landlock has no
#   lock right, and refusing locks would break sqlite (its journal locks
#   are POSIX locks), which this case runs in /tmp and /workspace. A
#   lease, which would make a host process that opens the file for
#   writing wait (lease-break-time, 45 s), is refused on the shared files.
# runtime: python
# expect-state: COMPLETED
# expect-stdout-not-contains: ALLOWED
# expect-stdout-not-contains: BROKEN
# expect-stdout-matches: (?m)^sqlite /tmp: locks work$
# expect-stdout-matches: (?m)^sqlite /workspace: locks work$
# expect-stdout-matches: (?m)^flock /workspace: locks work$
# expect-stdout-matches: (?m)^lease /usr/bin/id: blocked E[A-Z]+$
# expect-stdout-matches: (?m)^lease /etc/ld.so.cache: blocked E[A-Z]+$
import errno, fcntl, os, sqlite3

def sqlite_locks(d):
    path = os.path.join(d, "locks.db")
    a = sqlite3.connect(path, timeout=0, isolation_level=None)
    a.execute("create table t (x)")
    b = sqlite3.connect(path, timeout=0, isolation_level=None)
    a.execute("begin exclusive")
    a.execute("insert into t values (1)")
    try:
        b.execute("insert into t values (2)")
        print(f"sqlite {d}: BROKEN (a second writer got past an exclusive lock)")
        return
    except sqlite3.OperationalError as e:
        if "locked" not in str(e):
            print(f"sqlite {d}: BROKEN ({e})")
            return
    a.execute("commit")
    b.execute("insert into t values (2)")
    n = a.execute("select count(*) from t").fetchone()[0]
    print(f"sqlite {d}: " + ("locks work" if n == 2 else f"BROKEN ({n} rows)"), flush=True)

def flock_works(d):
    path = os.path.join(d, "flock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    other = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        print(f"flock {d}: BROKEN (two exclusive locks)")
    except OSError as e:
        print(f"flock {d}: " + ("locks work" if e.errno == errno.EWOULDBLOCK else f"BROKEN ({e})"), flush=True)

def lease(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)
        print(f"lease {path}: ALLOWED", flush=True)
    except OSError as e:
        print(f"lease {path}: blocked {errno.errorcode.get(e.errno, e.errno)}", flush=True)

sqlite_locks("/tmp")
sqlite_locks("/workspace")
flock_works("/workspace")
for p in ("/usr/bin/id", "/etc/ld.so.cache"):
    lease(p)
