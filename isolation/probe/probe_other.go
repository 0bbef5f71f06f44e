//go:build !linux

package probe

import (
	"fmt"

	"github.com/execfarm/execfarm/isolation"
)

// Run reports every required layer unavailable, its detail wrapping
// isolation.ErrNotSupported: execfarm isolates on Linux only.
func Run(cfg Config) Report {
	var r Report
	for _, name := range Names() {
		l := Layer{Name: name, Required: true, Detail: fmt.Errorf("probe %s: %w", name, isolation.ErrNotSupported).Error()}
		if name == Overlay || name == Landlock {
			l.Required = false
		}
		r.Layers = append(r.Layers, l)
	}
	return r
}
