// Package principal says who is calling the supervisor, as the transport
// established it: a named bearer token, the subject of a verified mTLS
// client certificate, or the one local principal of every caller
// authenticated by neither (a unix-socket caller, whose access control is
// the socket's file mode, or a TCP caller of a server that requires
// neither).
//
// Session sandboxes, and every execution, belong to the principal that
// created them: another principal is told they do not exist. A caller may
// narrow its principal to one of its clients by sending a client key
// (ScopeKeyHeader): each client is then a principal of its own, which
// its other clients cannot see, while quotas still count the unscoped
// principal (Unscoped). The unscoped principal sees a client's
// executions no more than another principal does, but lists, reads the
// status of and deletes its clients' session sandboxes
// (supervisor/session), so that a client gone with its key leaves no
// sandbox its holder cannot end. A key narrows and
// never widens; the MCP bridge gives each of its clients one. The
// transport (supervisor/transport) puts the caller's Principal in each
// call's context with NewContext; handlers read it with FromContext.
// Nothing here knows gRPC beyond reading a call's peer (FromPeer).
package principal
