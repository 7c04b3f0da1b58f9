// Command scriptagent runs the scripted ACP agent of package scriptagent on
// its stdin and stdout, for manual tests with any ACP client. It ends when
// its stdin closes (or on the usual signals). With SCRIPTAGENT_REPLAY set
// to a replay file it plays that agent's recorded traffic instead
// (scriptagent.Replay).
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/ahp-bridge/ahp-bridge/internal/scriptagent"
)

func main() {
	if path := os.Getenv(scriptagent.ReplayEnv); path != "" {
		if err := scriptagent.Replay(path, os.Stdin, os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "replay agent:", err)
			os.Exit(2)
		}
		return
	}
	if err := scriptagent.Main(context.Background(), os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "scriptagent:", err)
		os.Exit(1)
	}
}
