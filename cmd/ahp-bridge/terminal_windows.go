package main

import (
	"os"

	"golang.org/x/sys/windows"
)

// isTerminal reports whether f is an interactive console: only a console
// handle has a console mode (NUL and pipes do not).
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	if !ok {
		return false
	}
	var mode uint32
	return windows.GetConsoleMode(windows.Handle(file.Fd()), &mode) == nil
}
