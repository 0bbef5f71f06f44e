// Package client is execfarm's Go client: it connects to a supervisor
// (a running `execfarm serve`, or one embedded in this process), runs
// programs in single-use sandboxes with their output streamed, and drives
// session sandboxes (execs, files). The execfarm CLI connects through it.
//
// Connect chooses the supervisor as the CLI does: the one Options or the
// environment configure (SANDBOX_SOCKET_PATH; SANDBOX_USE_TCP,
// SANDBOX_TCP_HOST, SANDBOX_TCP_PORT; SANDBOX_TRANSPORT_MODE and the
// SANDBOX_TLS_* files; EXECFARM_TOKEN or EXECFARM_TOKEN_FILE), else one
// answering at the default socket, else an embedded one, which needs
// what `execfarm serve` needs (root, user namespaces, cgroup v2) and
// stops at Close.
//
//	ef, err := client.Connect(ctx, client.Options{})
//	if err != nil { ... }
//	defer ef.Close()
//	r, err := ef.Run(ctx, "print(6 * 7)", client.RunOptions{Runtime: client.Python,
//		Limits: client.Limits{Memory: 256 << 20, Timeout: 10 * time.Second}})
//	// r.ExitCode 0, r.Stdout "42\n", r.TerminationReason "exited"
//
// A program that fails is a Result (its exit code, termination reason);
// an error is a refusal, one type per kind (NotFoundError,
// InvalidArgumentError, ResourceExhaustedError, UnauthenticatedError,
// PermissionDeniedError, UnavailableError, DeadlineExceededError...), for
// errors.As.
package client
