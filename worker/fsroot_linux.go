package worker

import (
	"cmp"
	"container/heap"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/execfarm/execfarm/internal/utf8text"
	"github.com/execfarm/execfarm/isolation/namespace"
	"github.com/execfarm/execfarm/proto/workerv1"
)

// fileThread runs the path operations of a session sandbox's file calls
// (every open, create, rename, unlink, mkdir, stat and chmod) on one OS
// thread whose filesystem uid and gid are the sandbox user's (setfsuid and
// setfsgid act on the calling thread only; its supplementary groups are the
// worker's, none). Every other layer is the one the sandbox's programs
// have: the sandbox's own mount namespace and root (the host's tree is
// detached), its Landlock domain, its seccomp filter, and no capability
// that bypasses file permissions. A file operation thus can do nothing the
// program could not do itself, and what it creates belongs to the sandbox
// user. Data moves (read and write on an already open descriptor) run on
// the calling goroutines; the pages land in the sandbox's tmpfs and are
// charged to the sandbox's memory cgroup, where the worker lives.
//
// Paths are resolved with openat2(2) from a descriptor of the sandbox's
// root, with RESOLVE_IN_ROOT (a symbolic link or ".." planted by the
// program resolves as if the root were "/", never above it) and
// RESOLVE_NO_MAGICLINKS (no /proc/PID/fd or /proc/PID/root link, which
// from the worker would name the worker's own descriptors). Every call
// resolves its path once, to a descriptor, and acts relative to it, so a
// directory swapped for a link between two calls is resolved afresh, inside
// the root, and one swapped during a call is not followed. A kernel without
// openat2 (before Linux 5.6) gets no file operation: there is no weaker
// fallback.
type fileThread struct {
	// rootDir is the directory paths resolve in; "" = "/", the sandbox's
	// root (tests give another).
	rootDir string

	once sync.Once
	reqs chan func(root int)
	err  error
	root int // the root's descriptor, once started (0 before)
}

// inRoot are the openat2 resolve flags of a path resolved in the sandbox's
// root; beneath those of one component below a directory already open,
// neither following a link nor crossing into another mount.
const (
	inRoot  = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS
	beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_XDEV | unix.RESOLVE_NO_MAGICLINKS
)

// do runs fn on the file thread with the root's descriptor and returns its
// error.
func (f *fileThread) do(fn func(root int) error) error {
	f.once.Do(f.start)
	if f.err != nil {
		return f.err
	}
	var err error
	done := make(chan struct{})
	f.reqs <- func(root int) { err = fn(root); close(done) }
	<-done
	return err
}

// start locks a goroutine to a new thread for the worker's lifetime (it
// never unlocks: Go never reuses the thread, nor clones new threads from
// it), gives the thread the sandbox user's filesystem ids, opens the root
// and checks that openat2 works.
func (f *fileThread) start() {
	f.reqs = make(chan func(int))
	ready := make(chan error)
	go func() {
		runtime.LockOSThread()
		uid := namespace.SandboxUID
		// setfsuid/setfsgid report the previous value, not errors: a
		// second call tells whether the first took.
		_, _ = unix.SetfsgidRetGid(uid)
		_, _ = unix.SetfsuidRetUid(uid)
		if g, _ := unix.SetfsgidRetGid(uid); g != uid {
			ready <- fmt.Errorf("setfsgid %d did not take (fsgid %d)", uid, g)
			return
		}
		if u, _ := unix.SetfsuidRetUid(uid); u != uid {
			ready <- fmt.Errorf("setfsuid %d did not take (fsuid %d)", uid, u)
			return
		}
		dir := cmp.Or(f.rootDir, "/")
		root, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			ready <- &os.PathError{Op: "open", Path: dir, Err: err}
			return
		}
		fd, err := unix.Openat2(root, ".", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: inRoot})
		if err != nil {
			ready <- fmt.Errorf("file operations need openat2 with RESOLVE_IN_ROOT (Linux 5.6): %w", os.NewSyscallError("openat2", err))
			return
		}
		unix.Close(fd)
		f.root = root
		close(ready)
		for r := range f.reqs {
			r(root)
		}
	}()
	if err := <-ready; err != nil {
		f.err = fileError("start file operations", "/", err)
	}
}

// relative is abs (SandboxPath's form) relative to the root, as openat2
// takes it.
func relative(abs string) string {
	if abs == "/" {
		return "."
	}
	return abs[1:]
}

// split returns the parent of abs (relative to the root) and its last
// component; "" for the root itself.
func split(abs string) (parent, base string) {
	i := strings.LastIndexByte(abs, '/')
	return relative(abs[:max(i, 1)]), abs[i+1:]
}

// openInRoot opens rel in the root (openat2, inRoot). openat2 answers
// EAGAIN when a rename raced with the resolution of ".."; it is retried.
// Anything on a proc file system is EACCES (notProc).
func openInRoot(root int, rel string, flags int, mode uint32) (int, error) {
	how := &unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Mode: uint64(mode), Resolve: inRoot}
	for i := 0; ; i++ {
		fd, err := unix.Openat2(root, rel, how)
		if (err == unix.EAGAIN || err == unix.EINTR) && i < 32 {
			continue
		}
		if err == nil {
			if err = notProc(fd); err != nil {
				unix.Close(fd)
				return -1, err
			}
		}
		return fd, err
	}
}

// notProc refuses (EACCES) a descriptor on a proc file system. File calls
// run in the worker, which /proc answers as the owner of /proc/1: a
// download of /proc/1/maps gave the worker's memory map (its address
// layout) to the API client, though the worker is non-dumpable and the
// program itself is refused it. The sandbox's /proc holds nothing a client
// needs to read or write through the file API.
func notProc(fd int) error {
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return err
	}
	if st.Type == unix.PROC_SUPER_MAGIC {
		return unix.EACCES
	}
	return nil
}

// openBeneath opens the single component name below dir, following no
// link and staying on dir's file system.
func openBeneath(dir int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat2(dir, name, &unix.OpenHow{Flags: uint64(flags | unix.O_NOFOLLOW | unix.O_CLOEXEC), Resolve: beneath})
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		return fd, err
	}
}

// mkdirAll returns an O_PATH descriptor of the directory rel, creating it
// and its missing parents with mode. It is the algorithm of
// filepath-securejoin's MkdirAllHandle without its reopening through
// /proc/self/fd (a magic link, which the worker's own resolution refuses):
// the deepest existing prefix is resolved in the root, then each missing
// component is created with mkdirat and opened beneath its parent (a
// component swapped for a link meanwhile fails with ELOOP rather than
// being followed).
func mkdirAll(root int, rel string, mode uint32) (int, error) {
	fd, err := openInRoot(root, rel, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != unix.ENOENT {
		return fd, err
	}
	parts := strings.Split(rel, "/")
	cur, i := -1, len(parts)-1
	for ; i > 0; i-- {
		fd, err := openInRoot(root, strings.Join(parts[:i], "/"), unix.O_PATH|unix.O_DIRECTORY, 0)
		if err == nil {
			cur = fd
			break
		}
		if err != unix.ENOENT {
			return -1, err
		}
	}
	if cur < 0 {
		if cur, err = unix.Dup(root); err != nil {
			return -1, err
		}
		unix.CloseOnExec(cur)
	}
	for _, c := range parts[i:] {
		if err := unix.Mkdirat(cur, c, mode); err != nil && err != unix.EEXIST {
			unix.Close(cur)
			return -1, err
		}
		next, err := openBeneath(cur, c, unix.O_PATH|unix.O_DIRECTORY)
		unix.Close(cur)
		if err != nil {
			return -1, err
		}
		cur = next
	}
	return cur, nil
}

// openParent opens the parent directory of abs in the root (O_PATH); the
// caller acts on base relative to it.
func openParent(root int, abs string) (dir int, base string, err error) {
	parent, base := split(abs)
	dir, err = openInRoot(root, parent, unix.O_PATH|unix.O_DIRECTORY, 0)
	return dir, base, err
}

// info describes a file from its lstat.
func info(name string, st *unix.Stat_t) *workerv1.FileInfo {
	fi := &workerv1.FileInfo{
		Name:            name,
		Size:            st.Size,
		Mode:            st.Mode & 0o7777,
		ModTimeUnixNano: st.Mtim.Sec*1e9 + st.Mtim.Nsec,
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		fi.Type = workerv1.FileType_FILE_TYPE_FILE
	case unix.S_IFDIR:
		fi.Type = workerv1.FileType_FILE_TYPE_DIRECTORY
	case unix.S_IFLNK:
		fi.Type = workerv1.FileType_FILE_TYPE_SYMLINK
	default:
		fi.Type = workerv1.FileType_FILE_TYPE_OTHER
	}
	return fi
}

// statAt describes name below dir without following a final link; a
// link's target is read too.
func statAt(dir int, name string) (*workerv1.FileInfo, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, err
	}
	fi := info(name, &st)
	if fi.Type == workerv1.FileType_FILE_TYPE_SYMLINK {
		buf := make([]byte, unix.PathMax)
		if n, err := unix.Readlinkat(dir, name, buf); err == nil {
			fi.SymlinkTarget = string(buf[:n])
		}
	}
	validText(fi)
	return fi, nil
}

// validText makes fi's name and symbolic link target valid UTF-8, which a
// proto string must be (grpc refuses to marshal the whole message
// otherwise): a name is any bytes but "/" and NUL. Each run of invalid
// bytes becomes one U+FFFD (utf8text) and fi.NotUtf8 says the text is
// not the real one.
func validText(fi *workerv1.FileInfo) {
	if !utf8.ValidString(fi.Name) {
		fi.Name, fi.NotUtf8 = utf8text.String(fi.Name), true
	}
	if !utf8.ValidString(fi.SymlinkTarget) {
		fi.SymlinkTarget, fi.NotUtf8 = utf8text.String(fi.SymlinkTarget), true
	}
}

// tempName is the name an upload writes to before its rename: hidden,
// random, and within NAME_MAX.
func tempName(base string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	if len(base) > 200 {
		base = base[:200]
	}
	return "." + base + ".upload-" + hex.EncodeToString(b[:])
}

// maxRemoveDepth bounds how deep a recursive remove descends before it
// cuts the tree: each level holds one descriptor of the worker, which runs
// under the sandbox's RLIMIT_NOFILE.
const maxRemoveDepth = 128

// maxRemoveCuts bounds the cuts of one remove (treeRemover): a chain of
// depth D takes D/maxRemoveDepth of them, so any tree a workspace holds
// goes (a 64 MiB one has 16384 inodes), and a program that deepens the
// tree as fast as it is cut does not keep the remove going for ever.
const maxRemoveCuts = 4096

// errTooDeep refuses a tree that needs more cuts than a remove may make.
var errTooDeep = fmt.Errorf("deeper than %d levels: %w", maxRemoveDepth*maxRemoveCuts, unix.EBUSY)

// removeTree removes the directory name below parent and everything in
// it, descending beneath each directory without following a link or
// crossing into another mount (a mount point inside the tree fails the
// remove with EXDEV). The top directory itself may be a mount point (the
// workspace): its content goes, and its rmdir then answers EBUSY. A tree
// of any depth goes with at most maxRemoveDepth descriptors held: the
// directory found at that depth is moved, whole, to a hidden name in the
// top directory (a cut), whose next pass removes it from there. Before,
// a tree past 128 levels was refused "device or resource busy".
func removeTree(parent int, name string) error {
	return (&treeRemover{maxCuts: maxRemoveCuts}).remove(parent, name, 0)
}

// treeRemover is one recursive remove: its top directory, once open, how
// many cuts it made and may make.
type treeRemover struct {
	top           int
	cuts, maxCuts int
}

func (r *treeRemover) remove(parent int, name string, depth int) error {
	var dir int
	var err error
	if depth == 0 {
		dir, err = unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		r.top = dir
	} else {
		dir, err = openBeneath(parent, name, unix.O_RDONLY|unix.O_DIRECTORY)
	}
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	// A program may add entries meanwhile: a few passes, then ENOTEMPTY.
	// A pass that cut the tree does not count: the top directory holds
	// what it cut.
	for pass := 0; pass < 3; pass++ {
		cuts := r.cuts
		err := eachName(dir, func(n string) error {
			err := unix.Unlinkat(dir, n, 0)
			if err == unix.EISDIR || err == unix.EPERM {
				// Linux answers EISDIR for a directory; EPERM is POSIX's.
				var st unix.Stat_t
				if serr := unix.Fstatat(dir, n, &st, unix.AT_SYMLINK_NOFOLLOW); serr == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
					if depth+1 < maxRemoveDepth {
						return r.remove(dir, n, depth+1)
					}
					return r.cut(dir, n)
				}
			}
			if err == unix.ENOENT {
				return nil
			}
			return err
		})
		if err != nil {
			return err
		}
		err = unix.Unlinkat(parent, name, unix.AT_REMOVEDIR)
		if err != unix.ENOTEMPTY {
			return err
		}
		if r.cuts > cuts {
			pass = -1
		}
		if _, err := unix.Seek(dir, 0, 0); err != nil {
			return err
		}
	}
	return unix.ENOTEMPTY
}

// cut moves the directory n below dir to a hidden name in the top
// directory (on the same mount: the walk crosses none).
func (r *treeRemover) cut(dir int, n string) error {
	if r.cuts >= r.maxCuts {
		return errTooDeep
	}
	r.cuts++
	var b [8]byte
	_, _ = rand.Read(b[:])
	err := unix.Renameat2(dir, n, r.top, ".execfarm-remove-"+hex.EncodeToString(b[:]), unix.RENAME_NOREPLACE)
	if err == unix.ENOENT {
		return nil // gone meanwhile
	}
	return err
}

// eachName calls fn for each entry of the open directory dir ("." and ".."
// left out), reading it in batches of at most 32 KiB of entries.
func eachName(dir int, fn func(string) error) error {
	buf := make([]byte, 32<<10)
	var names []string
	for {
		n, err := unix.ReadDirent(dir, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n <= 0 {
			return nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names[:0])
		for _, name := range names {
			if err := fn(name); err != nil {
				return err
			}
		}
	}
}

// listDir returns the first max entries of the directory dir in byte
// order of their names, described by lstat, and how many entries it holds:
// it reads every name but keeps only max of them (a max-heap of the
// smallest), so a directory of any size costs the worker O(max) memory.
// It describes entries while prefix (the listed path and "/") plus their
// names and link targets add up to at most maxBytes, and reports cut when
// it left the rest out: described, the entries of 10000 names can hold
// 10000 link targets of 4095 bytes. An entry removed between the read and
// its lstat is left out.
func listDir(dir int, max, prefix, maxBytes int) (entries []*workerv1.FileInfo, total int64, cut bool, err error) {
	h := &nameHeap{}
	err = eachName(dir, func(n string) error {
		total++
		switch {
		case h.Len() < max:
			heap.Push(h, n)
		case n < (*h)[0]:
			(*h)[0] = n
			heap.Fix(h, 0)
		}
		return nil
	})
	if err != nil {
		return nil, 0, false, err
	}
	names := []string(*h)
	slices.Sort(names)
	out := make([]*workerv1.FileInfo, 0, len(names))
	held := 0
	for _, n := range names {
		fi, err := statAt(dir, n)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return nil, 0, false, err
		}
		if held += prefix + len(fi.GetName()) + len(fi.GetSymlinkTarget()); held > maxBytes {
			return out, total, true, nil
		}
		out = append(out, fi)
	}
	return out, total, false, nil
}

// nameHeap is a max-heap of names (container/heap).
type nameHeap []string

func (h nameHeap) Len() int           { return len(h) }
func (h nameHeap) Less(i, j int) bool { return h[i] > h[j] }
func (h nameHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *nameHeap) Push(x any)        { *h = append(*h, x.(string)) }
func (h *nameHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
