package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/execfarm/execfarm/supervisor/mcpbridge"
)

func mcpCmd(cf *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve the runSandbox tool to an AI agent over MCP on stdin/stdout",
		Long: `Serve the Model Context Protocol on stdin/stdout with one tool, runSandbox
(modes execute, stream, async, status, cancel, list, test; README: MCP).
It talks to the configured supervisor (flags or SANDBOX_* variables, as run
does); with none configured and none at the default socket, it starts an
embedded supervisor for as long as the MCP session lasts. Logs go to stderr:
stdout carries the protocol alone.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			client, closeFn, err := cf.connectOrEmbed(ctx, true)
			if err != nil {
				return err
			}
			defer closeFn()
			s, err := mcpbridge.NewServer(client, version)
			if err != nil {
				return err
			}
			// Run returns when the client closes stdin or ctx ends; a
			// SIGTERM is a normal end. A malformed line is answered with
			// a JSON-RPC error and the session goes on (Transport).
			if err := s.Run(ctx, &mcpbridge.Transport{In: os.Stdin, Out: os.Stdout}); err != nil && ctx.Err() == nil {
				return err
			}
			return nil
		},
	}
}
