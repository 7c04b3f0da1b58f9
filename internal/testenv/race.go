//go:build race

package testenv

// Race reports whether the test binary was built with -race. Tests use it to
// run their heavy cases smaller under the race detector, which makes every
// memory access several times slower (encoding/json, the hottest code in
// this module's tests, about tenfold), so that `go test -race ./...` stays
// within the README's two minutes on two cores. A test that scales by it
// says in a comment why the smaller count still means something.
const Race = true
