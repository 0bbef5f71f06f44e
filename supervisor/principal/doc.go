// Package principal says who is calling the supervisor, as the transport
// established it: a named bearer token, the subject of a verified mTLS
// client certificate, or the one local principal of every caller
// authenticated by neither (a unix-socket caller, whose access control is
// the socket's file mode, or a TCP caller of a server that requires
// neither).
//
// Session sandboxes, and every execution, belong to the principal that
// created them: another principal is told they do not exist. The
// transport (supervisor/transport) puts the caller's Principal in each
// call's context with NewContext; handlers read it with FromContext.
// Nothing here knows gRPC beyond reading a call's peer (FromPeer).
package principal
