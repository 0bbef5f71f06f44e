// Command pluginfloor is the least a go-plugin gRPC plugin can be: the
// go-plugin and gRPC packages, and the worker's protocol registered,
// nothing of execfarm's isolation or runtimes. BenchmarkVersusBwrap runs
// it without go-plugin's handshake cookie, so it starts, runs every
// package's init, and exits 1 at once: the CPU it takes is what any
// execfarm worker — a go-plugin plugin, one per sandbox — costs before it
// does anything. It lives in testdata so that ./... leaves it out.
package main

import (
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/execfarm/execfarm/proto/workerv1"
)

func main() {
	_ = workerv1.File_execfarm_worker_v1_worker_proto
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: plugin.HandshakeConfig{ProtocolVersion: 1, MagicCookieKey: "EXECFARM_PLUGIN_FLOOR", MagicCookieValue: "floor"},
		GRPCServer:      func(o []grpc.ServerOption) *grpc.Server { return grpc.NewServer(o...) },
	})
}
