package nodeid

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Lengths of the random parts, in hex digits.
const (
	runLen    = 8
	randomLen = 32
)

// ID is a parsed id.
type ID struct {
	// Node is the name of the node that made the id.
	Node string
	// Run tells the supervisor runs of one node apart (8 hex digits).
	Run string
	// Random is the id's own part (32 hex digits).
	Random string
}

// String returns the id in its one string form.
func (id ID) String() string { return id.Node + "_" + id.Run + "_" + id.Random }

// Parse reads an id. It returns an error wrapping ErrMalformed for any
// string that New could not have returned.
func Parse(s string) (ID, error) {
	node, rest, ok := strings.Cut(s, "_")
	if !ok {
		return ID{}, fmt.Errorf("%w: %q", ErrMalformed, s)
	}
	run, random, ok := strings.Cut(rest, "_")
	if !ok || !isHex(run, runLen) || !isHex(random, randomLen) || checkNode(node) != nil {
		return ID{}, fmt.Errorf("%w: %q", ErrMalformed, s)
	}
	return ID{Node: node, Run: run, Random: random}, nil
}

// Issuer makes the ids of one supervisor run on one node. Make one per
// run (NewIssuer) and share it between every kind of id the supervisor
// hands out.
type Issuer struct {
	node string
	run  string
	uuid bool // UUIDs
}

// NewIssuer returns the Issuer of a new run of the supervisor on node
// (an RFC 1123 DNS subdomain, as Kubernetes node names are; an error
// wrapping ErrBadNodeName otherwise).
func NewIssuer(node string) (*Issuer, error) {
	if err := checkNode(node); err != nil {
		return nil, err
	}
	return &Issuer{node: node, run: randomHex(runLen)}, nil
}

// Node returns the node's name.
func (i *Issuer) Node() string { return i.node }

// UUIDs returns an Issuer of i's node and run whose New makes random
// UUIDs (version 4, lower case) instead, for clients that expect
// ProDisco's ids: such an id names no node or run, so that Check takes
// any UUID for one it could have made (a store that does not hold it
// says not found, without saying which node made it or that the
// supervisor restarted). Check still tells i's other ids apart.
func (i *Issuer) UUIDs() *Issuer {
	return &Issuer{node: i.node, run: i.run, uuid: true}
}

// New returns a new id: this node's, this run's, with 128 fresh random
// bits (a UUID with 122 of them, for an Issuer of UUIDs).
func (i *Issuer) New() string {
	if i.uuid {
		return newUUID()
	}
	return ID{Node: i.node, Run: i.run, Random: randomHex(randomLen)}.String()
}

// newUUID returns a random UUID (RFC 9562 version 4), lower case.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])  // never fails (crypto/rand, Go 1.24+)
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // variant 10
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// isUUID reports whether s has a UUID's shape: 8-4-4-4-12 lower-case hex
// digits.
func isUUID(s string) bool {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return false
	}
	return isHex(s[:8]+s[9:13]+s[14:18]+s[19:23]+s[24:], 32)
}

// Check says whether this run of this node's supervisor could have made
// id: nil if so (then a store that does not hold it has forgotten it, or
// never made it), else an *OtherNodeError (another node made it), an
// *EarlierRunError (this node made it before a restart) or an error
// wrapping ErrMalformed (no supervisor made it).
func (i *Issuer) Check(id string) error {
	if i.uuid && isUUID(id) {
		return nil
	}
	p, err := Parse(id)
	switch {
	case err != nil:
		return err
	case p.Node != i.node:
		return &OtherNodeError{ID: id, Owner: p.Node, Node: i.node}
	case p.Run != i.run:
		return &EarlierRunError{ID: id, Node: i.node}
	}
	return nil
}

// HostNode returns a node name for this host when none is configured:
// its host name, in lower case (host names are case-insensitive). It
// fails, wrapping ErrBadNodeName, when that is no DNS subdomain; the
// caller should then ask for an explicit name.
func HostNode() (string, error) {
	h, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("nodeid: host name: %w", err)
	}
	h = strings.ToLower(h)
	if err := checkNode(h); err != nil {
		return "", err
	}
	return h, nil
}

// checkNode refuses a name that is not an RFC 1123 DNS subdomain, with
// the API machinery's own rule (what the API server applies to node
// names). Such a name holds no '_', which the format relies on.
func checkNode(name string) error {
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return fmt.Errorf("%w: %q: %s", ErrBadNodeName, name, strings.Join(msgs, "; "))
	}
	return nil
}

func randomHex(digits int) string {
	b := make([]byte, digits/2)
	_, _ = rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return hex.EncodeToString(b)
}

func isHex(s string, digits int) bool {
	if len(s) != digits {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
