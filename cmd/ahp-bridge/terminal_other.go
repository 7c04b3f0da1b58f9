//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly || windows)

package main

// isTerminal reports false where the terminal cannot be asked: the
// commands then behave as when run without one (no interactive prompts).
func isTerminal(any) bool { return false }
