// Command execfarm-worker is the agent inside a sandbox. It is started by
// the supervisor (execfarm serve), never by hand. See package worker.
//
// Run with forkserver.Arg as its first argument, it is the supervisor's
// fork server instead, which starts the workers (package
// isolation/forkserver).
package main

import (
	"os"

	"github.com/execfarm/execfarm/isolation/forkserver"
	"github.com/execfarm/execfarm/worker"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == forkserver.Arg {
		os.Exit(forkserver.Main())
	}
	os.Exit(worker.Main())
}
