//go:build !unix

package testenv

// reexec does nothing where a process cannot replace its own image; the
// test binary keeps the race runtime's exit sleep there.
func reexec([]string) {}
