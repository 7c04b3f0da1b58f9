package main

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// parseRetention reads --archive-retention: a Go duration ("720h") or a
// whole number of days ("90d"); "" and "0" mean off (zero).
func parseRetention(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" {
		return 0, nil
	}
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days < 0 || days > 100*365 {
			return 0, errors.New("want a duration such as 90d or 720h")
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, errors.New("want a duration such as 90d or 720h")
	}
	return d, nil
}
