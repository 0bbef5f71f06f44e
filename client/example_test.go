//go:build linux

package client_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/execfarm/execfarm/client"
)

// Example is the README's first lines, in Go: a configured supervisor,
// else an embedded one; a single-use run; a session sandbox with a file
// written, a command whose output streams, the file read back.
func Example() {
	ctx := context.Background()
	ef, err := client.Connect(ctx, client.Options{}) // a configured server, else an embedded one
	if err != nil {
		panic(err)
	}
	defer ef.Close()
	r, err := ef.Run(ctx, "print(6 * 7)", client.RunOptions{Runtime: client.Python,
		Limits: client.Limits{Memory: 256 << 20, Timeout: 10 * time.Second}})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d %q %s\n", r.ExitCode, r.Stdout, r.TerminationReason) // 0 "42\n" exited

	sbx, err := ef.CreateSandbox(ctx, client.SandboxOptions{Runtime: client.Shell, TTL: 600 * time.Second, Labels: map[string]string{"task": "demo"}})
	if err != nil {
		panic(err)
	}
	defer sbx.Delete(ctx)
	if err := sbx.Files().Write(ctx, "in/data.txt", []byte("hello")); err != nil {
		panic(err)
	}
	out, err := sbx.Exec(ctx, "tr a-z A-Z < in/data.txt", client.ExecOptions{OnStdout: func(chunk []byte) { os.Stdout.Write(chunk) }})
	if err != nil {
		panic(err)
	}
	data, err := sbx.Files().Read(ctx, "in/data.txt")
	if err != nil {
		panic(err)
	}
	fmt.Printf("\n%d %q\n", out.ExitCode, data) // 0 "hello"
	// Output:
	// 0 "42\n" exited
	// HELLO
	// 0 "hello"
}
