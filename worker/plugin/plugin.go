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

// BrokerUser is implemented by a worker Impl that dials services the
// supervisor serves over the go-plugin broker (the HostProxy).
type BrokerUser interface {
	SetBroker(*goplugin.GRPCBroker)
}

// GRPCServer registers Impl on the worker's gRPC server and hands it the
// broker.
func (p *Worker) GRPCServer(b *goplugin.GRPCBroker, s *grpc.Server) error {
	if bu, ok := p.Impl.(BrokerUser); ok {
		bu.SetBroker(b)
	}
	workerv1.RegisterWorkerServer(s, p.Impl)
	return nil
}

// Client is what the supervisor dispenses: the Worker client and the
// broker on which it serves the HostProxy to the worker.
type Client struct {
	workerv1.WorkerClient
	Broker *goplugin.GRPCBroker
}

// GRPCClient returns a *Client on the supervisor side.
func (p *Worker) GRPCClient(_ context.Context, b *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &Client{WorkerClient: workerv1.NewWorkerClient(c), Broker: b}, nil
}

// Plugins is the plugin set both sides use.
func Plugins(impl workerv1.WorkerServer) goplugin.PluginSet {
	return goplugin.PluginSet{Name: &Worker{Impl: impl}}
}
