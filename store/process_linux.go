package store

import (
	"os"
	"strconv"
	"strings"
)

// processStart reads the process's start time (field 22 of
// /proc/PID/stat, in clock ticks since boot); 0 if it cannot.
func processStart(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name (field 2) is in parentheses and may hold spaces
	// and parentheses itself: count fields after the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state), so field 22 is f[19].
	if len(f) < 20 {
		return 0
	}
	v, err := strconv.ParseInt(f[19], 10, 64)
	if err != nil {
		return 0
	}
	return v
}
