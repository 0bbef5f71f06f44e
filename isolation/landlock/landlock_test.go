package landlock

import (
	"errors"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		c    Config
		ok   bool
	}{
		{"root read-only", Config{ReadOnly: []string{"/"}, ReadWrite: []string{"/tmp"}, Devices: []string{"/dev/null"}}, true},
		{"nothing to read", Config{ReadWrite: []string{"/tmp"}}, false},
		{"relative", Config{ReadOnly: []string{"/"}, ReadWrite: []string{"tmp"}}, false},
		{"relative device", Config{ReadOnly: []string{"/"}, Devices: []string{"dev/null"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.c.validate()
			if tt.ok != (err == nil) || (err != nil && !errors.Is(err, ErrConfig)) {
				t.Fatalf("validate() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}
