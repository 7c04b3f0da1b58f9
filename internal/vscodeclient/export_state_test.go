package vscodeclient

// DispatchAction lets the scenario tests (package vscodeclient_test)
// dispatch any action VS Code dispatches, with the client's next clientSeq,
// which it returns so that a test can find the host's echo of it.
func (c *Client) DispatchAction(channel string, action map[string]any) (int64, error) {
	return c.dispatch(channel, action)
}
