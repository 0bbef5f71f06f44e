package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// versionReport is `execfarm version -o json`.
type versionReport struct {
	Client string `json:"client"`
	// Server is the supervisor's version (HealthCheck), "" when none
	// answered; ServerError then says why.
	Server      string `json:"server,omitempty"`
	ServerError string `json:"serverError,omitempty"`
}

func versionCmd(cf *clientFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print this client's version and, when one answers, the supervisor's",
		Long: `Print this client's version and the version of the supervisor the client
commands would use (flags or SANDBOX_* variables, else the default socket),
as its HealthCheck reports it. It exits 0 even when no supervisor answers:
the server line says why.`,
		Args: cobra.NoArgs,
	}
	out := addOutputFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		r := versionReport{Client: version}
		err := cf.call(func(client sandboxv1.SandboxServiceClient) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 3*time.Second)
			defer cancel()
			h, err := client.HealthCheck(ctx, &sandboxv1.HealthCheckRequest{})
			if err != nil {
				return err
			}
			r.Server = h.GetVersion()
			return nil
		})
		if err != nil {
			r.ServerError = firstLine(describe(err))
		}
		if out.structured() {
			return printValue(cmd.OutOrStdout(), *out, r)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "client: %s\n", r.Client)
		if r.ServerError != "" {
			fmt.Fprintf(cmd.OutOrStdout(), "server: unreachable: %s\n", r.ServerError)
		} else {
			fmt.Fprintf(cmd.OutOrStdout(), "server: %s\n", r.Server)
		}
		return nil
	}
	return cmd
}

// firstLine returns s up to its first newline.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
