package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
)

// Go's flag package stops at the first argument that is not a flag, so
// "tenure get NAME --store URL" would leave "--store URL" as arguments.
// Every command of tenure takes its flags before and after its other
// arguments instead, as most command lines do; "--" ends the flags.

// parsedArgs are the arguments of a command, its flags parsed.
type parsedArgs struct {
	// positional are the arguments that are not flags, before "--".
	positional []string
	// rest are the arguments after "--" (dashDash) or, when the command
	// takes at most so many positional arguments and is given more
	// without "--", the arguments from the first one too many on
	// (unparsed, extra).
	rest            []string
	dashDash, extra bool
	// at is the index in args where rest starts (after "--", or at the
	// first argument too many).
	at int
}

// parseArgs parses args with fs, flags anywhere among the other
// arguments, and returns the other arguments. A flag that takes a value
// takes the next argument unless written -flag=value. "--" ends the
// flags. With maxPositional >= 0, an argument that is not a flag (or is
// a flag fs does not define) after maxPositional arguments that are not
// flags ends the flags too, as if "--" were before it (extra).
func parseArgs(fs *flag.FlagSet, args []string, maxPositional int) (parsedArgs, error) {
	var p parsedArgs
	var flags []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			p.rest, p.dashDash, p.at = args[i+1:], true, i+1
			break
		}
		isFlag := len(a) > 1 && a[0] == '-'
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := fs.Lookup(name)
		if maxPositional >= 0 && len(p.positional) >= maxPositional && (!isFlag || f == nil && name != "h" && name != "help") {
			p.rest, p.extra, p.at = args[i:], true, i
			break
		}
		if !isFlag {
			p.positional = append(p.positional, a)
			continue
		}
		flags = append(flags, a)
		if !hasValue && i+1 < len(args) && f != nil && !isBoolFlag(f) {
			i++
			flags = append(flags, args[i])
		}
	}
	return p, fs.Parse(flags)
}

// isBoolFlag reports whether f takes no value (-v rather than -v value).
func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// errNoDashDash: tenure run was given its command without "--" before it.
var errNoDashDash = errors.New(`the command must follow "--"`)

// splitCommand returns NAME and the command from the arguments of tenure
// run (parsed by parseArgs with one positional argument at most): NAME,
// then "--" and the command. Without "--", the arguments after NAME would
// be taken for tenure's flags where they look like flags (sh -c), so they
// are refused, with the command line that says what they meant.
func splitCommand(p parsedArgs, args []string) (name string, command []string, err error) {
	switch {
	case len(p.positional) == 0:
		return "", nil, errors.New("want an election NAME and, after --, a COMMAND: tenure run [flags] NAME -- COMMAND [ARGS...]")
	case p.extra:
		shown := make([]string, 0, len(args)+1)
		for _, a := range args[:p.at] {
			shown = append(shown, shellQuote(a))
		}
		shown = append(shown, "--")
		for _, a := range p.rest {
			shown = append(shown, shellQuote(a))
		}
		return "", nil, fmt.Errorf("%w, or its arguments may be taken for tenure's flags: tenure run %s", errNoDashDash, strings.Join(shown, " "))
	case len(p.rest) == 0:
		return "", nil, fmt.Errorf("want a COMMAND to run after %q, after --: tenure run [flags] %s -- COMMAND [ARGS...]", p.positional[0], shellQuote(p.positional[0]))
	}
	return p.positional[0], p.rest, nil
}

// shellQuote quotes s for a POSIX shell when it holds anything but
// letters, digits and -_./:=@%+,
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
