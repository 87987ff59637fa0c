// Command winbash is test tooling: a stand-in for Git for Windows' bash.exe,
// for running the Windows build under Wine (scripts/test-windows puts it at
// C:\Program Files\Git\bin\bash.exe). Git for Windows is not in any package
// registry; the Claude CLI only needs a bash that runs `bash -c -l SCRIPT`.
// The shell is mvdan.cc/sh's interpreter (bash syntax, no bash binary);
// besides its builtins it runs `sleep SECONDS` itself (Git for Windows has a
// sleep.exe; Windows has none), everything else from PATH.
//
//	bash.exe [-l] [-i] [-e|-u|-x|-o opt ...] -c SCRIPT [NAME [ARG ...]]
//	bash.exe [options] [FILE [ARG ...]]   (no FILE: the script from stdin)
//
// Exit status: the script's; 2 for a usage or syntax error.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	var (
		command bool
		opts    []string // "set" options for the interpreter
	)
	for len(args) > 0 && len(args[0]) > 1 && (args[0][0] == '-' || args[0][0] == '+') {
		a := args[0]
		args = args[1:]
		switch {
		case a == "--":
			goto done
		case a == "--login", a == "--norc", a == "--noprofile", a == "-l", a == "-i", a == "-s":
		case a == "-c":
			command = true
		case a == "-o" || a == "+o":
			if len(args) == 0 {
				return usage("%s needs an option name", a)
			}
			opts = append(opts, a, args[0])
			args = args[1:]
		case strings.HasPrefix(a, "--"):
			return usage("unknown option %s", a)
		default: // combined short flags, e.g. -lc or -ex
			for _, c := range a[1:] {
				switch c {
				case 'c':
					command = true
				case 'l', 'i', 's':
				default:
					opts = append(opts, string(a[0])+string(c))
				}
			}
		}
	}
done:
	var (
		src  io.Reader
		name string
	)
	switch {
	case command:
		if len(args) == 0 {
			return usage("-c needs a script")
		}
		src, name = strings.NewReader(args[0]), "bash"
		args = args[1:]
		if len(args) > 0 { // $0, then the parameters
			args = args[1:]
		}
	case len(args) > 0:
		f, err := os.Open(args[0])
		if err != nil {
			return usage("%v", err)
		}
		defer f.Close()
		src, name = f, args[0]
		args = args[1:]
	default:
		src, name = os.Stdin, "bash"
	}
	file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(src, name)
	if err != nil {
		return usage("%v", err)
	}
	r, err := interp.New(
		interp.StdIO(os.Stdin, os.Stdout, os.Stderr),
		interp.Env(expand.ListEnviron(os.Environ()...)),
		interp.Params(append(append(opts, "--"), args...)...),
		interp.ExecHandlers(sleepBuiltin),
	)
	if err != nil {
		return usage("%v", err)
	}
	err = r.Run(context.Background(), file)
	if es, ok := errors.AsType[interp.ExitStatus](err); ok {
		return int(es)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bash:", err)
		return 1
	}
	return 0
}

// sleepBuiltin runs `sleep N` (N seconds, fractions allowed, or with an
// s/m/h suffix) in process, ended early when the shell is.
func sleepBuiltin(next interp.ExecHandlerFunc) interp.ExecHandlerFunc {
	return func(ctx context.Context, args []string) error {
		if args[0] != "sleep" {
			return next(ctx, args)
		}
		var total time.Duration
		for _, a := range args[1:] {
			unit := time.Second
			switch {
			case strings.HasSuffix(a, "s"):
				a = strings.TrimSuffix(a, "s")
			case strings.HasSuffix(a, "m"):
				a, unit = strings.TrimSuffix(a, "m"), time.Minute
			case strings.HasSuffix(a, "h"):
				a, unit = strings.TrimSuffix(a, "h"), time.Hour
			}
			n, err := strconv.ParseFloat(a, 64)
			if err != nil || n < 0 {
				fmt.Fprintf(interp.HandlerCtx(ctx).Stderr, "sleep: invalid time interval %q\n", a)
				return interp.ExitStatus(1)
			}
			total += time.Duration(n * float64(unit))
		}
		select {
		case <-time.After(total):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func usage(format string, a ...any) int {
	fmt.Fprintf(os.Stderr, "bash: "+format+"\n", a...)
	return 2
}
