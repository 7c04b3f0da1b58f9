package fakeagentchan_test

import (
	"fmt"

	fake "github.com/ahp-bridge/ahp-bridge/internal/fakeagentchan"
)

// A test scripts the server's reply to each prompt, points the client at
// URL (with ?token=… or the Bearer subprotocol), then inspects what the
// client sent.
func Example() {
	srv := fake.New(fake.Options{
		Token: "tok",
		Script: func(p fake.ClientFrame) []fake.Step {
			return []fake.Step{
				fake.Text("Looking at " + p.String("prompt")),
				fake.ToolInvocation("tc-1", "bash", map[string]any{"command": "rm -rf build"}),
				fake.Permission("permission_request", "r1", "tc-1", "Delete build/?"),
				fake.Await("approve", "reject"),
				fake.ToolResult("tc-1", "removed"),
				fake.Result("Cleaned up."),
			}
		},
	})
	defer srv.Close()

	// … drive an agentchan.Provider with URL srv.URL() and Token "tok" …

	for _, f := range srv.ReceivedOfType("approve") {
		fmt.Println("approved", f.String("requestId"))
	}
}
