package profile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor/limits"
)

// DefaultName names the profile of creates that name none.
const DefaultName = "default"

// Bounds of a profile file: it is read at start, and every create looks
// a name up in it.
const (
	MaxFileBytes       = 64 << 10
	MaxProfiles        = 64
	maxDescriptionSize = 256 // bytes
)

// Profile is one sandbox profile.
type Profile struct {
	// Name is the profile's name, a DNS label.
	Name string
	// Description is free text for people (and agents listing profiles).
	Description string
	// Runtime runs the execs that name none: goja, node, shell or
	// python; "" = the server's session default (shell).
	Runtime string
	// Limits overlay the server's defaults (nil = none): the sandbox's
	// limits are Resolve's.
	Limits *sandboxv1.ResourceLimits
	// ShutdownAfter is the lifetime of a sandbox whose create names
	// none; nil = the server's default; 0 = no expiry.
	ShutdownAfter *time.Duration
	// IdleTimeout ends a sandbox idle this long when its create names
	// none; nil or 0 = never.
	IdleTimeout *time.Duration
}

// Resolve returns p's limits over the server's defaults, within its
// ceilings (limits.Resolve). Errors: a *limits.FieldError.
func (p Profile) Resolve(defaults, ceilings limits.Set) (limits.Set, error) {
	return limits.Resolve(p.Limits, nil, defaults, ceilings)
}

// Set is a server's profiles. The zero value is not usable: use Default
// or Parse.
type Set struct {
	byName map[string]Profile
}

// Default returns the set of one profile, DefaultName, which is the
// server's defaults.
func Default() *Set {
	return &Set{byName: map[string]Profile{DefaultName: {Name: DefaultName}}}
}

// Get returns the profile name; "" is DefaultName. Errors: an
// *UnknownError.
func (s *Set) Get(name string) (Profile, error) {
	if name == "" {
		name = DefaultName
	}
	p, ok := s.byName[name]
	if !ok {
		return Profile{}, &UnknownError{Name: name, Known: s.Names()}
	}
	return p, nil
}

// Names returns the profiles' names, sorted.
func (s *Set) Names() []string {
	names := make([]string, 0, len(s.byName))
	for n := range s.byName {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Validate checks every profile's limits against the server's defaults
// and ceilings, and its lifetime with checkLifetime (the session
// manager's rule; nil = unchecked), so that a server does not start with
// a profile every create of which would fail. Errors name the profile.
func (s *Set) Validate(defaults, ceilings limits.Set, checkLifetime func(time.Duration) error) error {
	for _, name := range s.Names() {
		p := s.byName[name]
		if _, err := p.Resolve(defaults, ceilings); err != nil {
			return fmt.Errorf("profile: %q: %w", name, err)
		}
		if p.ShutdownAfter != nil && checkLifetime != nil {
			if err := checkLifetime(*p.ShutdownAfter); err != nil {
				return fmt.Errorf("profile: %q: shutdownAfterSeconds: %w", name, err)
			}
		}
	}
	return nil
}

// file is a profile file's shape.
type file struct {
	Profiles map[string]fileProfile `json:"profiles"`
}

type fileProfile struct {
	Description          string          `json:"description"`
	Runtime              string          `json:"runtime"`
	Limits               json.RawMessage `json:"limits"`
	ShutdownAfterSeconds *int64          `json:"shutdownAfterSeconds"`
	IdleTimeoutSeconds   *int64          `json:"idleTimeoutSeconds"`
}

// maxSeconds bounds the seconds of a profile, so that they convert to a
// time.Duration (about 292 years).
const maxSeconds = int64(1<<63-1) / int64(time.Second)

// Parse reads a profile file (package doc: the format). The result holds
// DefaultName whether or not the file defines it. Errors name the
// profile and the field; Validate checks the limits and lifetimes
// against a server.
func Parse(b []byte) (*Set, error) {
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("profile: the file is over %d bytes", MaxFileBytes)
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	var f file
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	if len(f.Profiles) > MaxProfiles {
		return nil, fmt.Errorf("profile: %d profiles; at most %d", len(f.Profiles), MaxProfiles)
	}
	s := Default()
	for name, fp := range f.Profiles {
		p, err := fp.profile(name)
		if err != nil {
			return nil, fmt.Errorf("profile: %q: %w", name, err)
		}
		s.byName[name] = p
	}
	return s, nil
}

func (fp fileProfile) profile(name string) (Profile, error) {
	if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
		return Profile{}, fmt.Errorf("not a profile name: %s", strings.Join(msgs, "; "))
	}
	p := Profile{Name: name, Description: fp.Description}
	if len(fp.Description) > maxDescriptionSize {
		return Profile{}, fmt.Errorf("description over %d bytes", maxDescriptionSize)
	}
	if fp.Runtime != "" {
		if _, ok := sandboxv1.ParseRuntime(fp.Runtime); !ok {
			return Profile{}, fmt.Errorf("runtime %q: want goja, node, shell or python", fp.Runtime)
		}
		p.Runtime = fp.Runtime
	}
	if len(fp.Limits) > 0 && string(fp.Limits) != "null" {
		p.Limits = &sandboxv1.ResourceLimits{}
		if err := protojson.Unmarshal(fp.Limits, p.Limits); err != nil {
			return Profile{}, fmt.Errorf("limits: %w", err)
		}
	}
	for _, f := range []struct {
		field string
		v     *int64
		dst   **time.Duration
	}{{"shutdownAfterSeconds", fp.ShutdownAfterSeconds, &p.ShutdownAfter}, {"idleTimeoutSeconds", fp.IdleTimeoutSeconds, &p.IdleTimeout}} {
		if f.v == nil {
			continue
		}
		if *f.v < 0 || *f.v > maxSeconds {
			return Profile{}, fmt.Errorf("%s %d: want 0 to %d", f.field, *f.v, maxSeconds)
		}
		d := time.Duration(*f.v) * time.Second
		*f.dst = &d
	}
	return p, nil
}

// Load reads and parses the profile file at path: a regular file of at
// most MaxFileBytes, read without blocking on a FIFO.
func Load(path string) (*Set, error) {
	// Checked before the open too: opening some devices has effects.
	if fi, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("profile: %s is not a regular file", path)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("profile: %s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	s, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return s, nil
}
