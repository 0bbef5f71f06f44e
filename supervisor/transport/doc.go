// Package transport is how clients and the supervisor find each other: a
// unix socket (default, mode 0660) or TCP, in insecure, TLS or mutual-TLS
// mode, configured from flags and the reference server's environment
// variables (SANDBOX_SOCKET_PATH, SANDBOX_USE_TCP, SANDBOX_TCP_HOST,
// SANDBOX_TCP_PORT, SANDBOX_TRANSPORT_MODE, SANDBOX_TLS_*, as ProDisco's
// sandbox server reads them). Insecure TCP on a non-loopback address is
// refused unless AllowInsecureRemote is set.
//
// TLS certificates are re-read while the process runs (reload.go): a
// server re-reads its certificate, key and client CA every CertRefresh
// with grpc-go's pemfile provider and uses what it holds at each
// handshake; a client reads its files at each new connection. A renewed
// certificate is served to the next connection without a restart.
// ReloadingCertificate gives another TLS server (MCP over HTTPS) the same
// re-read certificate, as a tls.Config's GetCertificate; its owner closes
// it once the server has stopped.
package transport
