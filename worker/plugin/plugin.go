// Package plugin is the go-plugin definition shared by the supervisor and
// the worker: the handshake, the plugin name, and the gRPC glue of the
// execfarm.worker.v1 Worker service. Both sides import it; it holds no
// logic of its own.
package plugin

import (
	"context"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/execfarm/execfarm/proto/workerv1"
)

// Name is the key of the worker plugin in go-plugin's plugin set.
const Name = "worker"

// Handshake must match between the supervisor and the worker binary; a
// worker binary of another protocol version refuses to start.
var Handshake = goplugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "EXECFARM_WORKER",
	MagicCookieValue: "d1b1c9e8-execfarm-worker",
}

// Worker is the go-plugin GRPCPlugin of the worker service. Impl is set on
// the worker side; the supervisor side leaves it nil.
type Worker struct {
	goplugin.NetRPCUnsupportedPlugin
	Impl workerv1.WorkerServer
}

// GRPCServer registers Impl on the worker's gRPC server.
func (p *Worker) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	workerv1.RegisterWorkerServer(s, p.Impl)
	return nil
}

// GRPCClient returns a workerv1.WorkerClient on the supervisor side.
func (p *Worker) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return workerv1.NewWorkerClient(c), nil
}

// Plugins is the plugin set both sides use.
func Plugins(impl workerv1.WorkerServer) goplugin.PluginSet {
	return goplugin.PluginSet{Name: &Worker{Impl: impl}}
}
