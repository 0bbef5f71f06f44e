// Command execfarm-goja is the goja runtime process of a sandbox: the
// worker starts it, as the sandbox user, with the program on fd 3. It is a
// binary of its own, apart from execfarm-worker, because it starts once
// per sandbox: without gRPC, protobuf and go-plugin it starts in half the
// time. See package runtime/goja (Main).
package main

import (
	"os"

	gojart "github.com/execfarm/execfarm/runtime/goja"
)

func main() { os.Exit(gojart.Main(os.Args[1:])) }
