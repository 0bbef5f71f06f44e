package transport

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		flags   Config
		env     map[string]string
		want    Config
		wantErr bool
	}{
		{name: "defaults", want: Config{}},
		{name: "socket from env", env: map[string]string{"SANDBOX_SOCKET_PATH": "/x.sock"}, want: Config{SocketPath: "/x.sock"}},
		{name: "flag wins", flags: Config{SocketPath: "/flag.sock"}, env: map[string]string{"SANDBOX_SOCKET_PATH": "/x.sock"}, want: Config{SocketPath: "/flag.sock"}},
		{name: "tcp true", env: map[string]string{"SANDBOX_USE_TCP": "true", "SANDBOX_TCP_HOST": "h", "SANDBOX_TCP_PORT": "1234"}, want: Config{UseTCP: true, TCPHost: "h", TCPPort: 1234}},
		{name: "tcp 1", env: map[string]string{"SANDBOX_USE_TCP": "1"}, want: Config{UseTCP: true}},
		{name: "tcp false", env: map[string]string{"SANDBOX_USE_TCP": "false"}, want: Config{}},
		// A flag beats the environment: --tcp=false keeps the unix socket.
		{name: "tcp flag false beats env", flags: Config{UseTCPSet: true}, env: map[string]string{"SANDBOX_USE_TCP": "true", "SANDBOX_TCP_PORT": "1234"},
			want: Config{UseTCPSet: true, TCPPort: 1234}},
		{name: "tcp flag true beats env", flags: Config{UseTCP: true, UseTCPSet: true}, env: map[string]string{"SANDBOX_USE_TCP": "false"},
			want: Config{UseTCP: true, UseTCPSet: true}},
		// A host or a port alone means TCP, as in ProDisco, unless
		// SANDBOX_USE_TCP says otherwise.
		{name: "host env implies tcp", env: map[string]string{"SANDBOX_TCP_HOST": "127.0.0.1"}, want: Config{UseTCP: true, TCPHost: "127.0.0.1"}},
		{name: "port env implies tcp", env: map[string]string{"SANDBOX_TCP_PORT": "1234"}, want: Config{UseTCP: true, TCPPort: 1234}},
		{name: "host flag implies tcp", flags: Config{TCPHost: "h"}, want: Config{UseTCP: true, TCPHost: "h"}},
		{name: "port flag implies tcp", flags: Config{TCPPort: 7}, want: Config{UseTCP: true, TCPPort: 7}},
		{name: "use tcp false beats host", env: map[string]string{"SANDBOX_USE_TCP": "false", "SANDBOX_TCP_HOST": "h"}, want: Config{TCPHost: "h"}},
		{name: "bad port", env: map[string]string{"SANDBOX_TCP_PORT": "99999"}, wantErr: true},
		{name: "bad port text", env: map[string]string{"SANDBOX_TCP_PORT": "x"}, wantErr: true},
		{name: "bad mode", env: map[string]string{"SANDBOX_TRANSPORT_MODE": "plain"}, wantErr: true},
		{name: "tls paths", env: map[string]string{"SANDBOX_TRANSPORT_MODE": "mtls", "SANDBOX_TLS_CERT_PATH": "c", "SANDBOX_TLS_KEY_PATH": "k", "SANDBOX_TLS_CA_PATH": "ca", "SANDBOX_TLS_CLIENT_CERT_PATH": "cc", "SANDBOX_TLS_CLIENT_KEY_PATH": "ck", "SANDBOX_TLS_SERVER_NAME": "sn"},
			want: Config{Mode: "mtls", CertPath: "c", KeyPath: "k", CAPath: "ca", ClientCertPath: "cc", ClientKeyPath: "ck", ServerName: "sn"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FromEnv(tt.flags, env(tt.env))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestListenUnixMode(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.sock")
	l, err := Config{SocketPath: p}.Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o660 || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("mode = %v, want socket 0660", fi.Mode())
	}
	if _, err := (Config{SocketPath: p}).Listen(); err == nil {
		t.Fatal("second Listen on a live socket succeeded")
	}
}

func TestListenReplacesStaleSocketButNotFiles(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.sock")
	l, err := Config{SocketPath: p}.Listen()
	if err != nil {
		t.Fatal(err)
	}
	// Leave the socket file behind, as a crashed server would.
	if ul, ok := l.(interface{ SetUnlinkOnClose(bool) }); ok {
		ul.SetUnlinkOnClose(false)
	}
	l.Close()
	l2, err := Config{SocketPath: p}.Listen()
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	l2.Close()
	f := filepath.Join(dir, "plain")
	os.WriteFile(f, []byte("x"), 0o600)
	if _, err := (Config{SocketPath: f}).Listen(); err == nil {
		t.Fatal("Listen replaced a regular file")
	}
}

func TestInsecureRemoteRefused(t *testing.T) {
	_, err := Config{UseTCP: true, TCPHost: "0.0.0.0", TCPPort: 1}.Listen()
	if !errors.Is(err, ErrInsecureRemote) {
		t.Fatalf("err = %v, want ErrInsecureRemote", err)
	}
	// Loopback needs no flag (port 1 is privileged but we are root in CI;
	// any error but ErrInsecureRemote is fine here).
	for _, c := range []Config{
		{UseTCP: true, TCPHost: "127.0.0.1", TCPPort: 1},
		{UseTCP: true, TCPHost: "0.0.0.0", TCPPort: 1, AllowInsecureRemote: true},
	} {
		l, err := c.Listen()
		if errors.Is(err, ErrInsecureRemote) {
			t.Errorf("%+v refused as insecure remote", c)
		}
		if l != nil {
			l.Close()
		}
	}
}

func TestTargets(t *testing.T) {
	if got := (Config{}).Target(); got != "unix://"+DefaultSocketPath {
		t.Errorf("Target = %q", got)
	}
	if got := (Config{UseTCP: true, TCPHost: "h", TCPPort: 7}).Target(); got != "dns:///h:7" {
		t.Errorf("Target = %q", got)
	}
	if (Config{}).Configured() || !(Config{UseTCP: true}).Configured() {
		t.Error("Configured wrong")
	}
}

// TestRelativeSocketPath: a relative --socket is listened on and dialled
// from the working directory.
func TestRelativeSocketPath(t *testing.T) {
	t.Chdir(t.TempDir())
	c := Config{SocketPath: "s.sock"}
	if got := c.Target(); got != "unix:s.sock" {
		t.Errorf("Target = %q, want unix:s.sock", got)
	}
	lis, err := c.Listen()
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	healthpb.RegisterHealthServer(g, health.NewServer())
	go func() { _ = g.Serve(lis) }()
	defer g.Stop()
	if err := check(t, c); err != nil {
		t.Fatalf("health check over a relative socket path: %v", err)
	}
}
