package supervisor

import (
	"strings"
	"testing"
)

func TestNewRejectsUnknownDefaultRuntime(t *testing.T) {
	_, err := New(Config{DefaultRuntime: "cobol"})
	if err == nil || !strings.Contains(err.Error(), "cobol") {
		t.Fatalf("New(cobol) = %v", err)
	}
}
