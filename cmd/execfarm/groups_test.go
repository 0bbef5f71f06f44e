package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestGroupsRefuseUnknownCommands: every command group of the tree
// (every command with subcommands, found by walking it), the root
// included, refuses a command it lacks with exit 126 and a message naming
// it, printing no help; and every group below the root refuses being
// called without a command. A red-team pass found `execfarm sandbox frob
// ID` printing the help and exiting 0.
func TestGroupsRefuseUnknownCommands(t *testing.T) {
	var groups [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		if c.HasSubCommands() {
			groups = append(groups, path)
		}
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string(nil), path...), sub.Name()))
		}
	}
	walk(rootCmd(), nil)
	if len(groups) < 3 { // the root, sandbox, cache
		t.Fatalf("found the groups %q; want the root, sandbox and cache at least", groups)
	}
	for _, g := range groups {
		for _, args := range [][]string{{"frob"}, {"frob", "ID"}, {}} {
			if len(g) == 0 && len(args) == 0 {
				continue // the root alone prints its help
			}
			root := rootCmd()
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&out)
			argv := append(append([]string(nil), g...), args...)
			root.SetArgs(argv)
			err := root.Execute()
			want := "frob"
			if len(args) == 0 {
				want = "needs a command"
			}
			if err == nil || exitForError(err) != exitRefused || !strings.Contains(err.Error(), want) {
				t.Errorf("execfarm %q: %v (exit %d); want refused with exit %d, saying %q", argv, err, exitCode(err), exitRefused, want)
			}
			if out.Len() > 0 {
				t.Errorf("execfarm %q printed %q; want no help", argv, out.String())
			}
		}
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	return exitForError(err)
}
