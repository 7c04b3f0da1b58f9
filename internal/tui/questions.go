package tui

// The questions of a session, asked at the terminal one line at a time,
// answered by policy, or left to another client.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
)

// note prints a line for the user: through the renderer on stdout, or on
// stderr with JSON (stdout then carries nothing but NDJSON).
func (s *Session) note(format string, args ...any) {
	if s.r != nil {
		s.r.line(format, args...)
		return
	}
	fmt.Fprintf(s.io.Stderr, format+"\n", args...)
}

// ask handles a new permission request or question: answered at once by
// ApproveAll/DenyAll, asked on the terminal, or left for another client.
// An entry asked already (the host updated it) is not asked again.
func (s *Session) ask(ctx context.Context, a asker) error {
	if a == nil || s.asked[a.key()] {
		return nil
	}
	s.asked[a.key()] = true
	if act, ok := a.auto(s.opts.ApproveAll, s.opts.DenyAll); ok {
		return s.reply(ctx, a, act)
	}
	if !s.io.Interactive || s.stdinEOF {
		s.note("waiting for another client to answer: %s", a.summary())
		s.hint()
		return nil
	}
	s.asks = append(s.asks, a)
	if s.lines == nil {
		s.lines = startLineReader(s.io.Stdin, s.stopIn)
	}
	s.showNext()
	return nil
}

// hint says once on stderr why nothing happens and what would help.
func (s *Session) hint() {
	if s.hinted || s.io.WaitHint == "" {
		return
	}
	s.hinted = true
	fmt.Fprintf(s.io.Stderr, "%s: %s\n", s.io.Name, s.io.WaitHint)
}

// showNext puts the oldest open question on screen if none is shown.
func (s *Session) showNext() {
	if s.shown != nil || len(s.asks) == 0 {
		return
	}
	s.shown = s.asks[0]
	s.note("%s", s.shown.prompt())
}

// answer feeds a line typed on stdin to the question on screen.
func (s *Session) answer(ctx context.Context, line string) error {
	if s.shown == nil {
		return nil // nothing asked: ignore stray input
	}
	act, done, problem := s.shown.answer(line)
	if problem != "" {
		s.note("  %s", problem)
		s.note("%s", s.shown.prompt())
		return nil
	}
	if !done {
		s.note("%s", s.shown.prompt())
		return nil
	}
	shown := s.shown
	s.drop(shown.key())
	if err := s.reply(ctx, shown, act); err != nil {
		return err
	}
	s.showNext()
	return nil
}

// resolved removes a question that has been answered (by us or another
// client) and moves on to the next.
func (s *Session) resolved(key string) {
	if s.shown != nil && s.shown.key() == key {
		s.note("  (answered)")
	}
	s.drop(key)
	s.showNext()
}

func (s *Session) drop(key string) {
	if s.shown != nil && s.shown.key() == key {
		s.shown = nil
	}
	kept := s.asks[:0]
	for _, a := range s.asks {
		if a.key() != key {
			kept = append(kept, a)
		}
	}
	s.asks = kept
}

// stdinClosed: nobody can answer here any more; leave the questions to
// other clients.
func (s *Session) stdinClosed() {
	if s.shown == nil && len(s.asks) == 0 {
		return
	}
	s.note("stdin closed; waiting for another client to answer")
	s.hint()
	s.shown = nil
	s.asks = nil
}

// startLineReader reads stdin line by line. The goroutine ends at EOF or,
// after a line was read, when stop is closed; a read blocked on a terminal
// ends with the process.
func startLineReader(r io.Reader, stop <-chan struct{}) <-chan string {
	lines := make(chan string)
	go func() {
		defer close(lines)
		br := bufio.NewReader(r)
		for {
			line, err := br.ReadString('\n')
			if line != "" {
				select {
				case lines <- strings.TrimRight(line, "\r\n"):
				case <-stop:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return lines
}
