package main

const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

func main() {}
