package claudetest_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/claude-rpc/claude-rpc/claudecli/claudetest"
)

func TestExpWarm(t *testing.T) {
	srv := claudetest.Start(t)
	for _, warm := range strings.Split(os.Getenv("EXP_WARM"), ";") {
		var firsts, seconds []time.Duration
		for rep := 0; rep < 3; rep++ {
			cmd := exec.Command(claudetest.CLI(t), "-p", "--verbose", "--input-format", "stream-json", "--output-format", "stream-json", "--include-partial-messages")
			cmd.Env = srv.CLIEnv(t.TempDir())
			cmd.Dir = t.TempDir()
			in, _ := cmd.StdinPipe()
			out, _ := cmd.StdoutPipe()
			cmd.Start()
			lines := make(chan string, 1000)
			go func() {
				sc := bufio.NewScanner(out)
				sc.Buffer(nil, 1<<24)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			wait := func(sub string) {
				for l := range lines {
					if strings.Contains(l, sub) {
						return
					}
				}
			}
			io.WriteString(in, `{"type":"control_request","request_id":"r1","request":{"subtype":"initialize"}}`+"\n")
			wait(`"r1"`)
			for i, w := range strings.Fields(warm) {
				io.WriteString(in, fmt.Sprintf(`{"type":"control_request","request_id":"w%d","request":{"subtype":%q}}`+"\n", i, w))
				wait(fmt.Sprintf(`"w%d"`, i))
			}
			time.Sleep(3 * time.Second)
			n := len(srv.MessagesRequests())
			for turn := 0; turn < 2; turn++ {
				start := time.Now()
				io.WriteString(in, `{"type":"user","message":{"role":"user","content":"hi"},"session_id":"default","parent_tool_use_id":null}`+"\n")
				wait(`"type":"result"`)
				if turn == 0 {
					firsts = append(firsts, time.Since(start))
				} else {
					seconds = append(seconds, time.Since(start))
				}
			}
			if got := len(srv.MessagesRequests()) - n; got != 2 {
				t.Logf("warm %q: %d requests during turns", warm, got)
			}
			in.Close()
			cmd.Wait()
		}
		t.Logf("warm %-60q first %v second %v", warm, firsts, seconds)
	}
}
