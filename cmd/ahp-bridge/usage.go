package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// newFlagSet makes a flag set that never prints: parseFlags reports its
// problems once, in this program's words, and help goes to stdout.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args; it returns flag.ErrHelp for -h/--help and a
// *usageError naming the flag with two dashes for anything wrong.
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	return &usageError{msg: flagErrorText(err.Error()), withUsage: true}
}

// The flag package's complaints, which name flags with one dash.
var (
	flagUndefined = regexp.MustCompile(`^flag provided but not defined: -+(.*)$`)
	flagNoValue   = regexp.MustCompile(`^flag needs an argument: -+(.*)$`)
	flagBadValue  = regexp.MustCompile(`^invalid (?:boolean )?value (".*") for (?:flag )?-+([^:]+): (.*)$`)
)

func flagErrorText(msg string) string {
	if m := flagUndefined.FindStringSubmatch(msg); m != nil {
		return "unknown flag --" + m[1]
	}
	if m := flagNoValue.FindStringSubmatch(msg); m != nil {
		return "--" + m[1] + " needs a value"
	}
	if m := flagBadValue.FindStringSubmatch(msg); m != nil {
		why := m[3]
		if strings.HasSuffix(why, "parse error") || strings.Contains(why, "invalid syntax") {
			why = "not a number"
		}
		return fmt.Sprintf("--%s %s: %s", m[2], m[1], why)
	}
	return msg
}

// helpText is a subcommand's usage: the synopsis (its first paragraph),
// what it does, and its flags with two dashes.
func helpText(usage string, fs *flag.FlagSet) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(usage, "\n"))
	b.WriteString("\n")
	if fs == nil {
		return b.String()
	}
	first := true
	fs.VisitAll(func(f *flag.Flag) {
		if first {
			b.WriteString("\nFlags:\n")
			first = false
		}
		name, text := flag.UnquoteUsage(f)
		switch {
		case isBoolFlag(f):
			name = ""
		case name == "int" || name == "int64" || name == "uint":
			name = "N"
		}
		fmt.Fprintf(&b, "  --%s", f.Name)
		if name != "" {
			fmt.Fprintf(&b, " %s", name)
		}
		fmt.Fprintf(&b, "\n        %s\n", strings.ReplaceAll(text, "\n", "\n        "))
	})
	return b.String()
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// synopsis is the first paragraph of a usage text.
func synopsis(usage string) string {
	first, _, _ := strings.Cut(strings.TrimLeft(usage, "\n"), "\n\n")
	return first + "\n"
}

// parseProblem finishes a subcommand whose arguments did not parse: help
// asked for is printed on stdout (exit 0); a mistake is said once on
// stderr (exit 2), followed for a command-line mistake by the synopsis and
// where to find more.
func parseProblem(cmd, usage string, fs *flag.FlagSet, err error, stdout, stderr io.Writer) int {
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, helpText(usage, fs))
		return exitOK
	}
	fmt.Fprintf(stderr, "ahp-bridge %s: %v\n", cmd, err)
	var ue *usageError
	if errors.As(err, &ue) && ue.withUsage {
		fmt.Fprintf(stderr, "\n%sRun 'ahp-bridge %s --help' for more.\n", synopsis(usage), cmd)
	}
	return exitUsage
}
