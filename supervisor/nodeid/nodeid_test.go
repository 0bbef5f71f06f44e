package nodeid

import (
	"errors"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// safe is the character set the format promises: no escaping in URLs,
// shell words, file names or SANDBOX:PATH arguments.
var safe = regexp.MustCompile(`^[a-z0-9._-]+$`)

func mustIssuer(t *testing.T, node string) *Issuer {
	t.Helper()
	i, err := NewIssuer(node)
	if err != nil {
		t.Fatal(err)
	}
	return i
}

func TestNewParsesBack(t *testing.T) {
	for _, node := range []string{"a", "node-1", "ip-10-0-3-17.eu-west-1.compute.internal", strings.Repeat("a", 63) + "." + strings.Repeat("b", 63)} {
		i := mustIssuer(t, node)
		id := i.New()
		p, err := Parse(id)
		if err != nil {
			t.Fatalf("Parse(%q): %v", id, err)
		}
		if p.Node != node || p.String() != id {
			t.Errorf("Parse(%q) = %+v", id, p)
		}
		if !safe.MatchString(id) || url.PathEscape(id) != id || url.QueryEscape(id) != id {
			t.Errorf("%q needs escaping", id)
		}
		if err := i.Check(id); err != nil {
			t.Errorf("Check of its own id: %v", err)
		}
		if i.New() == id {
			t.Error("two ids alike")
		}
	}
}

func TestCheck(t *testing.T) {
	a1 := mustIssuer(t, "node-a")
	a2 := mustIssuer(t, "node-a") // the supervisor on node-a, restarted
	b := mustIssuer(t, "node-b")
	id := a1.New()

	var other *OtherNodeError
	if err := b.Check(id); !errors.As(err, &other) || other.Owner != "node-a" || other.Node != "node-b" || other.ID != id {
		t.Errorf("node-b checking node-a's id: %v", err)
	} else if !strings.Contains(err.Error(), `node "node-a"`) {
		t.Errorf("message does not name the owner: %v", err)
	}
	var earlier *EarlierRunError
	if err := a2.Check(id); !errors.As(err, &earlier) || earlier.Node != "node-a" {
		t.Errorf("restarted node-a checking its earlier id: %v", err)
	}
	for _, s := range []string{"", "0a2ad6a2-7b1c-4c1e-9f1e-0123456789ab", "node-a", "node-a__", "node-a_5f0c2a9e",
		"Node-A_5f0c2a9e_0b9c3e41d7a24c59a1f3e2b8c4d6a701", "node-a_5F0C2A9E_0b9c3e41d7a24c59a1f3e2b8c4d6a701",
		"node-a_5f0c2a9e_0b9c3e41d7a24c59a1f3e2b8c4d6a70", "node-a_5f0c2a9e_0b9c3e41d7a24c59a1f3e2b8c4d6a701_x",
		"a/b_5f0c2a9e_0b9c3e41d7a24c59a1f3e2b8c4d6a701", "a:b_5f0c2a9e_0b9c3e41d7a24c59a1f3e2b8c4d6a701"} {
		if err := a1.Check(s); !errors.Is(err, ErrMalformed) {
			t.Errorf("Check(%q) = %v, want ErrMalformed", s, err)
		}
	}
}

func TestNewIssuerRefusesBadNames(t *testing.T) {
	for _, node := range []string{"", "Node", "a_b", "a:b", "a/b", "-a", "a.", strings.Repeat("a", 254), "a b"} {
		if _, err := NewIssuer(node); !errors.Is(err, ErrBadNodeName) {
			t.Errorf("NewIssuer(%q) = %v, want ErrBadNodeName", node, err)
		}
	}
}

// FuzzParse: whatever Parse accepts is safe to pass around unescaped,
// prints back to itself, and names a node NewIssuer accepts.
func FuzzParse(f *testing.F) {
	f.Add("node-a_5f0c2a9e_0b9c3e41d7a24c59a1f3e2b8c4d6a701")
	f.Add("a.b_00000000_00000000000000000000000000000000")
	f.Add("_5f0c2a9e_0b9c3e41d7a24c59a1f3e2b8c4d6a701")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Parse(%q): %v does not wrap ErrMalformed", s, err)
			}
			return
		}
		if p.String() != s || !safe.MatchString(s) {
			t.Fatalf("Parse(%q) = %+v", s, p)
		}
		if _, err := NewIssuer(p.Node); err != nil {
			t.Fatalf("Parse accepted node %q that NewIssuer refuses: %v", p.Node, err)
		}
	})
}

// TestUUIDs: an Issuer of UUIDs makes random version 4 UUIDs, takes any
// UUID for one it could have made, and still tells ids of other nodes
// and of earlier runs apart.
func TestUUIDs(t *testing.T) {
	i, err := NewIssuer("node-a")
	if err != nil {
		t.Fatal(err)
	}
	u := i.UUIDs()
	seen := map[string]bool{}
	for range 100 {
		id := u.New()
		if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(id) || seen[id] {
			t.Fatalf("New = %q: want a fresh version 4 UUID", id)
		}
		seen[id] = true
		if err := u.Check(id); err != nil {
			t.Fatalf("Check(%q) = %v", id, err)
		}
		if err := i.Check(id); !errors.Is(err, ErrMalformed) {
			t.Fatalf("an Issuer of node ids: Check(%q) = %v, want ErrMalformed", id, err)
		}
	}
	other, _ := NewIssuer("node-b")
	var oe *OtherNodeError
	if err := u.Check(other.New()); !errors.As(err, &oe) {
		t.Errorf("Check of another node's id = %v, want *OtherNodeError", err)
	}
	if err := u.Check(i.New()); err != nil {
		t.Errorf("Check of this run's node id = %v", err)
	}
	for _, bad := range []string{"0000000-0000-4000-8000-0000000000000", "ABCDEF01-0000-4000-8000-000000000000", "invalid-id"} {
		if err := u.Check(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("Check(%q) = %v, want ErrMalformed", bad, err)
		}
	}
}
