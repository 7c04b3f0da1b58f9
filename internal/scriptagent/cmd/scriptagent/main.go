// Command scriptagent runs the scripted ACP agent of package scriptagent on
// its stdin and stdout, for manual tests with any ACP client. It ends when
// its stdin closes (or on the usual signals).
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/ahp-bridge/ahp-bridge/internal/scriptagent"
)

func main() {
	if err := scriptagent.Main(context.Background(), os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "scriptagent:", err)
		os.Exit(1)
	}
}
