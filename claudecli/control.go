package claudecli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli/jsonl"
)

// controlProc is a CLI process run for its control protocol alone (no
// user line, so no turn: no API call): Query and RenameSession. The caller
// owns it: send writes requests, answers carries the CLI's control
// responses in the order it printed them, and close ends it. When ctx
// ends first, the process (its group) is stopped and next says why.
type controlProc struct {
	ctx    context.Context
	p      *cliProcess
	stdin  io.WriteCloser
	closed chan struct{} // closed by close: answers are no longer taken
	// answers gets each control_response line's "response" object, and is
	// closed when the CLI's stdout ends. A reader goroutine owns stdout and
	// reads it to the end, so the CLI never blocks on a full pipe while it
	// exits.
	answers chan gjson.Result
}

// startControl starts the CLI with args, unless ctx has ended.
func startControl(ctx context.Context, cfg Config, args []string) (*controlProc, error) {
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	p, stdin, err := startPiped(cfg, args)
	if err != nil {
		return nil, err
	}
	c := &controlProc{ctx: ctx, p: p, stdin: stdin, closed: make(chan struct{}), answers: make(chan gjson.Result, 8)}
	go func() {
		defer close(c.answers)
		lr := jsonl.NewReader(p.Stdout(), 64<<20)
		for {
			line, err := lr.Next()
			if errors.Is(err, jsonl.ErrLineTooLong) {
				continue
			}
			if err != nil {
				return
			}
			if v := gjson.ParseBytes(line); v.Get("type").String() == "control_response" {
				select {
				case c.answers <- gjson.Parse(v.Get("response").Raw): // its own copy: line is reused
				case <-c.closed:
				}
			}
		}
	}()
	return c, nil
}

// send writes the control request req with id.
func (c *controlProc) send(id string, req map[string]any) error {
	b, _ := json.Marshal(map[string]any{"type": "control_request", "request_id": id, "request": req})
	if _, err := c.stdin.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("asking claude (%s): %w (%s)", req["subtype"], err, c.p.Exit())
	}
	return nil
}

// next is the next answer; ok is false when the CLI's stdout ended first,
// and an error names the timeout or ctx's cause (the process is then
// stopped).
func (c *controlProc) next(deadline <-chan time.Time, what string, timeout time.Duration) (a gjson.Result, ok bool, err error) {
	select {
	case a, ok = <-c.answers:
		return a, ok, nil
	case <-deadline:
		c.p.Stop()
		return gjson.Result{}, false, fmt.Errorf("claude did not answer %s within %v", what, timeout)
	case <-c.ctx.Done():
		c.p.Stop()
		return gjson.Result{}, false, fmt.Errorf("waiting for claude's answer to %s: %w", what, context.Cause(c.ctx))
	}
}

// close closes the CLI's stdin, which makes it exit, and waits for it (2 s
// at most, then it is stopped). Its stdout is still read to the end.
func (c *controlProc) close() {
	close(c.closed)
	_ = c.stdin.Close()
	waitOrStop(c.p, 2*time.Second)
}

// failed is err with how the CLI ended, once it has: for a CLI that
// refused a request or exited before answering.
func (c *controlProc) failed(err error) error {
	_ = c.stdin.Close()
	<-c.p.Done()
	return fmt.Errorf("%w: %w", err, c.p.Exit())
}
