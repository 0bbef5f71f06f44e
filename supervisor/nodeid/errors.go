package nodeid

import (
	"errors"
	"fmt"
)

var (
	// ErrMalformed is returned by Parse for a string that is not an id of
	// this package's format: no node owns it.
	ErrMalformed = errors.New("nodeid: not an id of the form NODE_RUN_RANDOM")
	// ErrBadNodeName is returned by NewIssuer for a node name that is not
	// an RFC 1123 DNS subdomain.
	ErrBadNodeName = errors.New("nodeid: node name is not a DNS subdomain (RFC 1123)")
)

// OtherNodeError is an id that another node owns: the request reached
// the wrong node's supervisor.
type OtherNodeError struct {
	// ID is the id asked for.
	ID string
	// Owner is the node that made the id and holds what it names.
	Owner string
	// Node is the node that was asked.
	Node string
}

func (e *OtherNodeError) Error() string {
	return fmt.Sprintf("%q belongs to node %q, not to this node %q: send the request to the supervisor on node %q", e.ID, e.Owner, e.Node, e.Owner)
}

// EarlierRunError is an id this node made in an earlier run of its
// supervisor, which has restarted since: what it named is gone, since
// nothing a supervisor holds outlives it.
type EarlierRunError struct {
	// ID is the id asked for.
	ID string
	// Node is the node that made it and was asked.
	Node string
}

func (e *EarlierRunError) Error() string {
	return fmt.Sprintf("%q was made by an earlier run of the supervisor on node %q, which has restarted since; nothing it held survives a restart", e.ID, e.Node)
}
