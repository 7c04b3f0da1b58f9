//go:build !linux

package main

import "errors"

// pinProcess cannot pin threads on this system.
func pinProcess(int, []int) error { return errors.New("CPU affinity is only set on Linux") }

// allowedCPUs is unknown on this system.
func allowedCPUs() []int { return nil }
