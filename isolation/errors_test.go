package isolation_test

import (
	"errors"
	"testing"

	"github.com/execfarm/execfarm/isolation"
	"github.com/execfarm/execfarm/isolation/capability"
	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/isolation/landlock"
	"github.com/execfarm/execfarm/isolation/seccomp"
	"github.com/execfarm/execfarm/isolation/seccomp/install"
)

// TestEveryNotSupportedWrapsTheOne: the package doc's promise, that every
// isolation package's "not supported" is an isolation.ErrNotSupported,
// holds for each sub-package's own sentinel, which keeps its own text.
func TestEveryNotSupportedWrapsTheOne(t *testing.T) {
	for name, err := range map[string]error{
		"capability": capability.ErrNotSupported,
		"cgroup":     cgroup.ErrNotSupported,
		"landlock":   landlock.ErrNotSupported,
		"seccomp":    seccomp.ErrNotSupported,
		"install":    install.ErrNotSupported,
	} {
		if !errors.Is(err, isolation.ErrNotSupported) {
			t.Errorf("%s.ErrNotSupported (%v) does not wrap isolation.ErrNotSupported", name, err)
		}
	}
	if err := landlock.ErrNotSupported; err.Error() != "landlock: not supported" {
		t.Errorf("landlock.ErrNotSupported says %q", err)
	}
}
