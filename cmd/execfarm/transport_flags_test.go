package main

import (
	"os"
	"testing"

	"github.com/spf13/cobra"

	"github.com/execfarm/execfarm/supervisor/transport"
)

// TestFlagsBeatTheEnvironment: the client's and serve's flags choose
// between the unix socket and TCP before SANDBOX_USE_TCP, SANDBOX_TCP_HOST
// and SANDBOX_TCP_PORT may; without a flag the environment decides, a
// host or a port alone meaning TCP, as in ProDisco. A red-team pass found
// `SANDBOX_USE_TCP=true execfarm serve --tcp=false` serving TCP.
func TestFlagsBeatTheEnvironment(t *testing.T) {
	for _, tt := range []struct {
		args []string
		env  map[string]string
		tcp  bool
	}{
		{[]string{"--tcp=false"}, map[string]string{"SANDBOX_USE_TCP": "true"}, false},
		{[]string{"--tcp=false"}, map[string]string{"SANDBOX_TCP_PORT": "5000"}, false},
		{[]string{"--tcp"}, map[string]string{"SANDBOX_USE_TCP": "false"}, true},
		{[]string{"--socket", "/x.sock"}, map[string]string{"SANDBOX_USE_TCP": "1", "SANDBOX_TCP_PORT": "5000"}, false},
		{[]string{"--port", "5000"}, map[string]string{"SANDBOX_USE_TCP": "false"}, true},
		{[]string{"--host", "127.0.0.1"}, nil, true},
		{nil, map[string]string{"SANDBOX_USE_TCP": "true"}, true},
		{nil, map[string]string{"SANDBOX_TCP_HOST": "127.0.0.1"}, true},
		{nil, map[string]string{"SANDBOX_TCP_PORT": "5000"}, true},
		{nil, map[string]string{"SANDBOX_USE_TCP": "false", "SANDBOX_TCP_PORT": "5000"}, false},
		{nil, nil, false},
	} {
		for _, side := range []string{"client", "serve"} {
			for _, k := range []string{"SANDBOX_USE_TCP", "SANDBOX_TCP_HOST", "SANDBOX_TCP_PORT", "SANDBOX_SOCKET_PATH"} {
				t.Setenv(k, tt.env[k])
			}
			var got bool
			switch side {
			case "client":
				// As main wires it: persistent flags of the root, parsed
				// by a subcommand.
				var cf clientFlags
				root := &cobra.Command{Use: "execfarm"}
				cf.register(root)
				root.AddCommand(&cobra.Command{Use: "health", RunE: func(*cobra.Command, []string) error {
					tc, err := cf.transport()
					got = tc.UseTCP
					return err
				}})
				root.SetArgs(append([]string{"health"}, tt.args...))
				if err := root.Execute(); err != nil {
					t.Fatalf("client %v %v: %v", tt.args, tt.env, err)
				}
			case "serve":
				cmd := serveCmd()
				if err := cmd.ParseFlags(tt.args); err != nil {
					t.Fatal(err)
				}
				// As serve's RunE resolves them (test/cli runs serve
				// itself).
				f := cmd.Flags()
				var tc transport.Config
				tc.SocketPath, _ = f.GetString("socket")
				tc.UseTCP, _ = f.GetBool("tcp")
				tc.TCPHost, _ = f.GetString("host")
				tc.TCPPort, _ = f.GetInt("port")
				flagsChooseTransport(f, &tc)
				tc, err := transport.FromEnv(tc, os.Getenv)
				if err != nil {
					t.Fatalf("serve %v %v: %v", tt.args, tt.env, err)
				}
				got = tc.UseTCP
			}
			if got != tt.tcp {
				t.Errorf("%s %v with %v: TCP %v, want %v", side, tt.args, tt.env, got, tt.tcp)
			}
		}
	}
}
