package testenv

import (
	"flag"
	"strconv"
)

// ParallelFlag is the testing package's flag that bounds how many tests
// marked t.Parallel run at once; it defaults to GOMAXPROCS.
const ParallelFlag = "test.parallel"

// WaitingParallel raises the number of parallel tests to n, unless the
// command line set -test.parallel itself. Call it from TestMain, before
// m.Run, in a package whose parallel tests mostly wait on something other
// than this process's CPU: agents in other processes that pause between
// steps (the SDKs' example agents, Claude's CLI), or the kernel's file
// notifications going quiet. GOMAXPROCS of them at a time (two on CI's
// machine) leaves the CPU idle while they wait, and `go test ./...` within
// its budget depends on that time (issue 11). Tests that are CPU-bound or
// count process-wide resources stay out of t.Parallel.
func WaitingParallel(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == ParallelFlag })
	if given || flag.Lookup(ParallelFlag) == nil {
		return
	}
	if err := flag.Set(ParallelFlag, strconv.Itoa(n)); err != nil {
		panic("testenv: setting -" + ParallelFlag + ": " + err.Error())
	}
}
