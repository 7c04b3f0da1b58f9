//go:build race

package bridge_test

// raceDetector reports whether the tests run with -race, which makes every
// memory access several times slower: the heaviest tests then run fewer
// rounds, saying in a comment why that still means something.
const raceDetector = true
