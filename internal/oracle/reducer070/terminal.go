package reducer070

import "github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"

// Terminal applies a to the terminal state s.
func Terminal(s *wire.TerminalState, a wire.StateAction, clock Clock) {
	if s == nil {
		return
	}
	switch a := actionValue(a).(type) {
	case *wire.TerminalDataAction:
		appendTerminalData(s, a.Data)
	case *wire.TerminalResizedAction:
		s.Cols, s.Rows = wire.Ptr(a.Cols), wire.Ptr(a.Rows)
	case *wire.TerminalClaimedAction:
		s.Claim = clone(a.Claim)
	case *wire.TerminalTitleChangedAction:
		s.Title = a.Title
	case *wire.TerminalCwdChangedAction:
		s.Cwd = wire.Ptr(a.Cwd)
	case *wire.TerminalExitedAction:
		s.ExitCode = clone(a.ExitCode)
	case *wire.TerminalClearedAction:
		s.Content = []wire.TerminalContentPart{}
	case *wire.TerminalCommandDetectionAvailableAction:
		s.SupportsCommandDetection = wire.Ptr(true)
	case *wire.TerminalCommandExecutedAction:
		s.Content = append(s.Content, wire.NewTerminalContentPart(&wire.TerminalCommandPart{
			Type:        "command",
			CommandID:   a.CommandID,
			CommandLine: a.CommandLine,
			Timestamp:   a.Timestamp,
		}))
		// A command part proves shell integration works even when the host
		// never sent commandDetectionAvailable.
		s.SupportsCommandDetection = wire.Ptr(true)
	case *wire.TerminalCommandFinishedAction:
		// Every part with the id is finished, not only the first: ids are
		// meant to be unique, and a duplicate left running would swallow
		// later output.
		for _, p := range s.Content {
			if c, ok := p.Value.(*wire.TerminalCommandPart); ok && c != nil && c.CommandID == a.CommandID {
				c.IsComplete = true
				c.ExitCode = clone(a.ExitCode)
				c.DurationMs = clone(a.DurationMs)
			}
		}
	case *wire.TerminalInputAction:
		// Input only goes to the pty; what it produces comes back as
		// terminal/data.
	}
}

// appendTerminalData adds output to the running command, or else to the
// trailing unclassified part, or else starts a new unclassified part (after a
// finished command or a part of a kind this package does not know).
func appendTerminalData(s *wire.TerminalState, data string) {
	if n := len(s.Content); n > 0 {
		switch tail := s.Content[n-1].Value.(type) {
		case *wire.TerminalCommandPart:
			if tail != nil && !tail.IsComplete {
				tail.Output += data
				return
			}
		case *wire.TerminalUnclassifiedPart:
			if tail != nil {
				tail.Value += data
				return
			}
		}
	}
	s.Content = append(s.Content, wire.NewTerminalContentPart(&wire.TerminalUnclassifiedPart{Type: "unclassified", Value: data}))
}
