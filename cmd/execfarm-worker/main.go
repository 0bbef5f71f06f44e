// Command execfarm-worker is the agent inside a sandbox. It is started by
// the supervisor (execfarm serve), never by hand. See package worker.
package main

import (
	"os"

	"github.com/execfarm/execfarm/worker"
)

func main() { os.Exit(worker.Main()) }
