package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/execfarm/execfarm/proto/execfarmv1"
)

// secondsFlag is a time in whole seconds given as a number of seconds
// (600) or a duration (10m, 1h30m).
type secondsFlag struct{ n int64 }

func (f *secondsFlag) String() string { return strconv.FormatInt(f.n, 10) }
func (f *secondsFlag) Type() string   { return "seconds" }

func (f *secondsFlag) Set(s string) error {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return fmt.Errorf("%d: must not be negative", n)
		}
		f.n = n
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q: want seconds (600) or a duration (10m)", s)
	}
	if err := wholeSeconds("", d, ""); err != nil {
		return fmt.Errorf("%q: want whole seconds, not negative", s)
	}
	f.n = int64(d / time.Second)
	return nil
}

// sandboxExtendCmd is `execfarm sandbox extend SANDBOX --ttl T`.
func sandboxExtendCmd(cf *clientFlags) *cobra.Command {
	var ttl secondsFlag
	cmd := &cobra.Command{
		Use:   "extend SANDBOX --ttl SECONDS",
		Short: "Set the time a session sandbox has left before it expires, from now",
		Long: `Set the time a session sandbox (yours or your clients') has left before it
expires to --ttl from now: seconds (600) or a duration (10m), shorter or
longer than before; 0 = no expiry, only on a server without a lifetime
ceiling. Its whole lifetime since its creation stays within the server's
ceiling (serve --sandbox-max-lifetime, 24h by default). Prints the new
expiry.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return cf.sessionCall(func(c sessionClients) error {
				sb, err := c.sessions.ExtendSandbox(cmd.Context(), &execfarmv1.ExtendSandboxRequest{SandboxId: args[0], TtlSeconds: ttl.n})
				if err != nil {
					return err
				}
				if ms := sb.GetExpiresAtMs(); ms != 0 {
					fmt.Printf("%s expires %s (%s)\n", sb.GetSandboxId(), expiry(ms), time.UnixMilli(ms).Format(time.RFC3339))
				} else {
					fmt.Printf("%s expires never\n", sb.GetSandboxId())
				}
				return nil
			})
		},
	}
	cmd.Flags().Var(&ttl, "ttl", "time left from now: seconds (600) or a duration (10m); 0 = no expiry")
	_ = cmd.MarkFlagRequired("ttl")
	return cmd
}

// mvCmd is `execfarm mv SANDBOX SRC DST`.
func mvCmd(cf *clientFlags) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "mv SANDBOX SRC DST",
		Short: "Move or rename a file or directory inside a session sandbox",
		Long: `Move or rename a file, symlink (never what it points to) or directory inside
a session sandbox. Paths are absolute or relative to /workspace; DST is the
new path itself (not a directory to move into), its parent must exist, and
both must be on one filesystem (/workspace and /tmp are apart). A DST that
exists is refused unless --force, which replaces a file, or an empty
directory with a directory.`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			return cf.sessionCall(func(c sessionClients) error {
				_, err := c.sessions.MoveFile(cmd.Context(), &execfarmv1.MoveFileRequest{SandboxId: args[0], Source: args[1], Destination: args[2], Overwrite: force})
				return err
			})
		},
	}
	cmd.Flags().BoolVarP(&force, "force", "f", false, "replace DST if it exists")
	return cmd
}
