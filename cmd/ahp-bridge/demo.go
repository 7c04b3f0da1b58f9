package main

import (
	"context"
	"io"

	"github.com/ahp-bridge/ahp-bridge/internal/scriptagent"
)

// runDemoAgent runs the built-in scripted ACP agent on stdin/stdout; the demo
// starts the bridge with `ahp-bridge demo-agent` as its ACP command.
func runDemoAgent(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) int {
	if err := scriptagent.Main(ctx, stdin, stdout, stderr); err != nil {
		return exitError
	}
	return exitOK
}

func runDemo(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return exitError
}
