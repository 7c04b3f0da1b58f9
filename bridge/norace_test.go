//go:build !race

package bridge_test

// raceDetector reports whether the tests run with -race (see race_test.go).
const raceDetector = false
