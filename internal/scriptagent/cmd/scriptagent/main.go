// Command scriptagent runs the scripted ACP agent of package scriptagent on
// its stdin and stdout, for manual tests with any ACP client.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/ahp-bridge/ahp-bridge/internal/scriptagent"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := scriptagent.Main(ctx, os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "scriptagent:", err)
		os.Exit(1)
	}
}
