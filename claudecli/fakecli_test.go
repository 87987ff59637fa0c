package claudecli

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// fakeEnv makes the test binary act as a stand-in CLI instead of running
// tests, whatever its arguments (startTurn passes the CLI's own). A Go
// program, not a shell script, so the tests that use it run on Windows too.
//
//	relay   copies stdin to stdout, then prints "done"
//	fail    prints "oops" to stderr and exits with status 4
//	flood   prints 3,000,000 x's, a newline and "end", then exits
//	own     the stream transport's CLI running a turn by itself: see ownCLI
const fakeEnv = "CLAUDECLI_FAKE"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeEnv); mode != "" {
		os.Exit(fakeCLI(mode))
	}
	// No test leaves a goroutine behind, but the reaper's, which lives as
	// long as the process (EnableReaper: TestReaper's process of its own).
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/claude-rpc/claude-rpc/claudecli.EnableReaper.func1"))
}

func fakeCLI(mode string) int {
	switch mode {
	case "relay":
		if _, err := io.Copy(os.Stdout, os.Stdin); err != nil {
			return 1
		}
		fmt.Println("done")
	case "fail":
		fmt.Fprintln(os.Stderr, "oops")
		return 4
	case "flood":
		if _, err := os.Stdout.Write(append(bytes.Repeat([]byte("x"), 3_000_000), "\nend\n"...)); err != nil {
			return 1
		}
	case "own":
		return ownCLI()
	default:
		fmt.Fprintf(os.Stderr, "%s: unknown mode %q\n", fakeEnv, mode)
		return 2
	}
	return 0
}

// exeSuffix is what an executable's name ends with here: ".exe" on
// Windows, which finds programs by extension.
var exeSuffix = map[bool]string{true: ".exe"}[runtime.GOOS == "windows"]

// fake is a Config running the test binary as the stand-in CLI in mode.
func fake(t *testing.T, mode string) Config {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	return Config{Path: exe, Env: append(os.Environ(), fakeEnv+"="+mode)}
}

// ownCLI stands in for the CLI on the stream transport: it answers each
// user line with a turn (init, result), and 300 ms after the first one's
// result runs a turn by itself (init, result marked "own"), as the CLI
// does when a background task ends while it is idle. Each turn's two lines
// are one write, so another turn's lines never come between them (the
// CLI's turns are serial).
func ownCLI() int {
	var mu sync.Mutex
	write := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		_, _ = os.Stdout.WriteString(s)
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 0; in.Scan(); {
		if !strings.Contains(in.Text(), `"type":"user"`) {
			continue
		}
		n++
		write(fmt.Sprintf("{\"type\":\"system\",\"subtype\":\"init\",\"turn\":%d}\n{\"type\":\"result\",\"subtype\":\"success\",\"turn\":%d}\n", n, n))
		if n == 1 {
			go func() {
				time.Sleep(300 * time.Millisecond)
				write("{\"type\":\"system\",\"subtype\":\"init\",\"own\":true}\n{\"type\":\"result\",\"subtype\":\"success\",\"own\":true}\n")
			}()
		}
	}
	return 0
}
