package cache

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestOpenRefusesUnsafeDir: a directory someone else can write to, own,
// or swap (a symlink, a parent writable by others without the sticky bit)
// is refused; a private one is accepted.
func TestOpenRefusesUnsafeDir(t *testing.T) {
	base := t.TempDir()
	mk := func(name string, mode os.FileMode) string {
		d := filepath.Join(base, name)
		if err := os.Mkdir(d, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, mode); err != nil {
			t.Fatal(err)
		}
		return d
	}
	good := mk("good", 0o755)
	if _, err := Open(good); err != nil {
		t.Fatalf("Open(0755 dir of ours): %v", err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	open := mk("open", 0o755)
	cases := map[string]string{
		"world-writable":                        mk("world", 0o777),
		"group-writable":                        mk("group", 0o775),
		"symlink":                               link,
		"parent writable by others, not sticky": filepath.Join(mk("parent", 0o777), "scripts"),
		"created below a world-writable parent": filepath.Join(open, "x", "scripts"),
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		other := mk("other", 0o700)
		if err := os.Chown(other, 4242, 4242); err != nil {
			t.Fatal(err)
		}
		cases["owned by another uid"] = other
	}
	for name, dir := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := Open(dir); !errors.Is(err, ErrUnsafeDir) {
				t.Fatalf("Open(%s) = %v, want ErrUnsafeDir", dir, err)
			}
		})
	}
	sticky := mk("sticky", 0o777|os.ModeSticky)
	if err := os.Chmod(sticky, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(filepath.Join(sticky, "scripts")); err != nil {
		t.Fatalf("a private directory below a sticky world-writable one (like /tmp): %v", err)
	}
}

// TestIgnoresFilesItDidNotWrite: a script planted in the directory with a
// valid name dated 2099 (listed first, and run by `cached`, were it
// trusted) is ignored when another uid owns it, when others may write to
// it, or when it is a hard link; Clear leaves it alone.
func TestIgnoresFilesItDidNotWrite(t *testing.T) {
	c := openTemp(t)
	mine := mustSave(t, c, "// mine\nconsole.log(1)", t0)
	plant := func(when time.Time, code string, mode os.FileMode) string {
		name := fileName(hashHex(code), when)
		p := filepath.Join(c.Dir(), name)
		writeFile(t, p, header(when)+code)
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return name
	}
	var planted []string
	planted = append(planted, plant(time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC), "// planted: group-writable\nsteal()", 0o660))
	if os.Geteuid() == 0 {
		name := plant(time.Date(2099, 1, 3, 0, 0, 0, 0, time.UTC), "// planted: another user\nsteal()", 0o600)
		if err := os.Chown(filepath.Join(c.Dir(), name), 4242, 4242); err != nil {
			t.Fatal(err)
		}
		planted = append(planted, name)
	}
	list, err := c.List("")
	if err != nil || len(list) != 1 || list[0].Name != mine.Name {
		t.Fatalf("List = %+v, %v; want only %s", list, err, mine.Name)
	}
	for _, name := range planted {
		if _, _, err := c.Find(name); !errors.Is(err, ErrNotFound) {
			t.Errorf("Find(%s) = %v, want ErrNotFound", name, err)
		}
	}
	if _, _, err := c.Find("2099"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Find(2099) = %v, want ErrNotFound", err)
	}
	if n, err := c.Clear(); n != 1 || err != nil {
		t.Fatalf("Clear = %d, %v; want 1", n, err)
	}
	for _, name := range planted {
		if _, err := os.Lstat(filepath.Join(c.Dir(), name)); err != nil {
			t.Errorf("Clear removed %s, which it did not write: %v", name, err)
		}
	}
}

// TestBounds: past MaxScripts scripts or MaxBytes bytes, Save removes the
// oldest; the script just saved stays even when it alone is over the
// byte bound.
func TestBounds(t *testing.T) {
	c, err := OpenConfig(Config{Dir: filepath.Join(t.TempDir(), "s"), MaxScripts: 3, MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var saved []Entry
	for i := range 5 {
		saved = append(saved, mustSave(t, c, fmt.Sprintf("console.log(%d)", i), t0.Add(time.Duration(i)*time.Second)))
	}
	list, err := c.List("")
	if err != nil || len(list) != 3 || list[0].Name != saved[4].Name || list[2].Name != saved[2].Name {
		t.Fatalf("List = %+v, %v; want the 3 newest", list, err)
	}
	b, err := OpenConfig(Config{Dir: filepath.Join(t.TempDir(), "b"), MaxBytes: 250})
	if err != nil {
		t.Fatal(err)
	}
	code := func(i int) string { return fmt.Sprintf("// %d\n%0100d", i, i) } // ~150 bytes with the header
	mustSave(t, b, code(1), t0)
	last := mustSave(t, b, code(2), t0.Add(time.Second))
	if list, _ := b.List(""); len(list) != 1 || list[0].Name != last.Name {
		t.Fatalf("List = %+v; want only the newest within 250 bytes", list)
	}
	if _, err := OpenConfig(Config{Dir: t.TempDir(), MaxScripts: -1}); !errors.Is(err, ErrInvalidDir) {
		t.Errorf("negative bound: %v", err)
	}
}
