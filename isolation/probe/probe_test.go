package probe

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// fakeReport is a host with every layer available, except those named
// in missing.
func fakeReport(missing ...string) Report {
	var r Report
	for _, name := range Names() {
		if name == controllerPrefix+"cpuacct" || name == controllerPrefix+"freezer" {
			continue // a cgroup v2 host
		}
		l := Layer{Name: name, Available: !slices.Contains(missing, name), Required: name != Overlay, Detail: "fake"}
		if !l.Available {
			l.Detail = "fake: gone"
		}
		r.Layers = append(r.Layers, l)
	}
	return r
}

func TestResolve(t *testing.T) {
	tests := []struct {
		name     string
		report   Report
		allow    []string
		wantErr  error    // nil: may start
		inErr    []string // substrings of the error
		statuses map[string]Status
		inactive []string // layers not Active
	}{
		{
			name:     "everything available",
			report:   fakeReport(),
			statuses: map[string]Status{UserNamespace: StatusOK, Cgroup: StatusOK, Seccomp: StatusOK, Overlay: StatusInfo, UIDRange: StatusOK},
			inactive: []string{Overlay},
		},
		{
			name:     "seccomp missing",
			report:   fakeReport(Seccomp),
			wantErr:  ErrHostCannotIsolate,
			inErr:    []string{"seccomp (fake: gone", "--allow-degraded=seccomp"},
			statuses: map[string]Status{Seccomp: StatusMissing},
			inactive: []string{Seccomp, Overlay},
		},
		{
			name:     "seccomp missing and allowed",
			report:   fakeReport(Seccomp),
			allow:    []string{"seccomp"},
			statuses: map[string]Status{Seccomp: StatusDegradedAllowed, UserNamespace: StatusOK},
			inactive: []string{Seccomp, Overlay},
		},
		{
			name:     "seccomp available and allowed is switched off",
			report:   fakeReport(),
			allow:    []string{" seccomp "},
			statuses: map[string]Status{Seccomp: StatusDegradedAllowed},
			inactive: []string{Seccomp, Overlay},
		},
		{
			name:     "several missing, every one named",
			report:   fakeReport(PIDNamespace, "cgroup-memory", UIDRange),
			wantErr:  ErrHostCannotIsolate,
			inErr:    []string{"pid-namespace (fake: gone", "cgroup-memory (fake: gone", "uid-range (fake: gone", "cannot be degraded"},
			statuses: map[string]Status{PIDNamespace: StatusMissing, "cgroup-memory": StatusMissing, UIDRange: StatusMissing, Cgroup: StatusOK},
		},
		{
			name:     "cgroup cannot be degraded",
			report:   fakeReport(Cgroup),
			allow:    []string{"cgroup"},
			wantErr:  ErrNotDegradable,
			inErr:    []string{"--allow-degraded=cgroup", "killed and limited"},
			statuses: map[string]Status{Cgroup: StatusMissing},
		},
		{
			name:    "cgroup cannot be degraded even when present",
			report:  fakeReport(),
			allow:   []string{"cgroup"},
			wantErr: ErrNotDegradable,
		},
		{
			name:    "typo is an error, not an empty allowance",
			report:  fakeReport(Seccomp),
			allow:   []string{"secomp"},
			wantErr: ErrUnknownLayer,
			inErr:   []string{`"secomp"`},
			// the typo allows nothing
			statuses: map[string]Status{Seccomp: StatusMissing},
		},
		{
			name:     "missing optional layer is information",
			report:   fakeReport(Overlay),
			statuses: map[string]Status{Overlay: StatusInfo},
		},
		{
			name: "landlock absent from the kernel is information",
			report: func() Report {
				r := fakeReport()
				for i := range r.Layers {
					if r.Layers[i].Name == Landlock {
						r.Layers[i] = Layer{Name: Landlock, Detail: "not available on this kernel"}
					}
				}
				return r
			}(),
			statuses: map[string]Status{Landlock: StatusInfo},
			inactive: []string{Landlock, Overlay},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.report.Resolve(tt.allow)
			if tt.wantErr == nil && err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("Resolve error = %v, want %v", err, tt.wantErr)
			}
			if merr := tt.report.Missing(tt.allow); (merr == nil) != (err == nil) || (err != nil && merr.Error() != err.Error()) {
				t.Errorf("Missing = %v, Resolve error = %v", merr, err)
			}
			for _, s := range tt.inErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			if len(got) != len(tt.report.Layers) {
				t.Fatalf("Resolve returned %d layers, want %d", len(got), len(tt.report.Layers))
			}
			for _, rl := range got {
				if want, ok := tt.statuses[rl.Name]; ok && rl.Status != want {
					t.Errorf("%s: status %s, want %s", rl.Name, rl.Status, want)
				}
				wantActive := !slices.Contains(tt.inactive, rl.Name) && rl.Status == StatusOK
				if tt.inactive != nil && rl.Active != wantActive {
					t.Errorf("%s: active %v, want %v", rl.Name, rl.Active, wantActive)
				}
				if rl.Active && rl.Status != StatusOK {
					t.Errorf("%s: active with status %s", rl.Name, rl.Status)
				}
			}
			var me *MissingError
			if errors.As(err, &me) {
				for _, l := range me.Layers {
					if l.Available || !l.Required {
						t.Errorf("MissingError names %s, which is available=%v required=%v", l.Name, l.Available, l.Required)
					}
				}
			}
		})
	}
}

func TestParseAllowDegraded(t *testing.T) {
	tests := []struct {
		in      []string
		want    []string
		wantErr error
	}{
		{in: nil, want: nil},
		{in: []string{""}, want: nil},
		{in: []string{"seccomp"}, want: []string{"seccomp"}},
		{in: []string{"seccomp,seccomp", " seccomp"}, want: []string{"seccomp"}},
		{in: []string{"seccomp,"}, want: []string{"seccomp"}},
		{in: []string{"SECCOMP"}, wantErr: ErrUnknownLayer},
		{in: []string{"all"}, wantErr: ErrUnknownLayer},
		{in: []string{"seccomp", "nope"}, wantErr: ErrUnknownLayer},
		{in: []string{"user-namespace"}, wantErr: ErrNotDegradable},
		{in: []string{"cgroup-memory"}, wantErr: ErrNotDegradable},
		{in: []string{"landlock"}, wantErr: ErrNotDegradable},
		{in: []string{"uid-range"}, wantErr: ErrNotDegradable},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.in, "|"), func(t *testing.T) {
			got, err := ParseAllowDegraded(tt.in)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("ParseAllowDegraded(%q) error = %v, want %v", tt.in, err, tt.wantErr)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("ParseAllowDegraded(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func FuzzParseAllowDegraded(f *testing.F) {
	for _, s := range []string{"", "seccomp", "seccomp,seccomp", " seccomp ,", "cgroup", "secomp", "user-namespace,seccomp", ",,", "seccomp\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseAllowDegraded([]string{s})
		if err != nil {
			if got != nil {
				t.Fatalf("error %v with names %q", err, got)
			}
			if !errors.Is(err, ErrUnknownLayer) && !errors.Is(err, ErrNotDegradable) {
				t.Fatalf("error %v wraps neither sentinel", err)
			}
			return
		}
		for i, name := range got {
			if ok, _ := Degradable(name); !ok {
				t.Fatalf("%q accepted, but it cannot be degraded", name)
			}
			if slices.Contains(got[:i], name) {
				t.Fatalf("%q returned twice", name)
			}
		}
		// Parsing the result again is the identity.
		again, err := ParseAllowDegraded([]string{strings.Join(got, ",")})
		if err != nil || !slices.Equal(again, got) {
			t.Fatalf("reparse of %q = %q, %v", got, again, err)
		}
		// Whatever it accepted, it cannot make a missing non-degradable
		// layer allowed.
		if err := fakeReport(Cgroup, UserNamespace).Missing([]string{s}); !errors.Is(err, ErrHostCannotIsolate) {
			t.Fatalf("Missing(%q) = %v, want ErrHostCannotIsolate", s, err)
		}
	})
}

func TestDegradable(t *testing.T) {
	for _, name := range Names() {
		ok, why := Degradable(name)
		if ok != (name == Seccomp) {
			t.Errorf("Degradable(%s) = %v", name, ok)
		}
		if !ok && why == "" {
			t.Errorf("Degradable(%s): no reason", name)
		}
	}
	if ok, _ := Degradable("nope"); ok {
		t.Error("an unknown layer is degradable")
	}
}

func TestIDSpan(t *testing.T) {
	tests := []struct {
		name        string
		cfg         Config
		first, last uint64
		wantErr     bool
	}{
		{name: "defaults", cfg: Config{}, first: 1 << 30, last: 1<<30 + 64*65536 - 1},
		{name: "explicit", cfg: Config{UIDBase: 100000, UIDRangeSize: 1000, UIDSlots: 2}, first: 100000, last: 101999},
		{name: "last id ends at 2^32-2", cfg: Config{UIDBase: 1<<32 - 1 - 65536, UIDSlots: 1}, first: 1<<32 - 1 - 65536, last: 1<<32 - 2},
		{name: "would reach 2^32-1", cfg: Config{UIDBase: 1<<32 - 65536, UIDSlots: 1}, wantErr: true},
		{name: "overflows 32 bits", cfg: Config{UIDBase: 3 << 30, UIDSlots: 1 << 15}, wantErr: true},
		{name: "negative slots", cfg: Config{UIDSlots: -1}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first, last, err := tt.cfg.idSpan()
			if (err != nil) != tt.wantErr {
				t.Fatalf("idSpan error = %v, want error %v", err, tt.wantErr)
			}
			if !tt.wantErr && (first != tt.first || last != tt.last) {
				t.Errorf("idSpan = %d..%d, want %d..%d", first, last, tt.first, tt.last)
			}
		})
	}
}
