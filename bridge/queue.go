package bridge

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/transform"
)

// message is a user message from the host: a prompt, a steering message or
// a follow-up.
type message struct {
	text   string
	images []claudecli.Image
}

// userMessage is the message in pi's shape: its text, then its images.
func (m message) userMessage() transform.Message {
	content := make([]transform.Content, 0, 1+len(m.images))
	if m.text != "" || len(m.images) == 0 {
		content = append(content, transform.TextContent(m.text))
	}
	for _, im := range m.images {
		content = append(content, transform.Content{Type: "image", Data: im.Data, MimeType: im.MimeType})
	}
	return transform.UserMessage(content, nowMillis())
}

// readMessage reads a command's "message" and optional "images".
func readMessage(c command) (message, error) {
	text, err := c.str("message")
	if err != nil {
		return message{}, err
	}
	images, err := readImages(c)
	if err != nil {
		return message{}, err
	}
	if strings.TrimSpace(text) == "" && len(images) == 0 {
		// The API refuses an empty message; say so before a run starts.
		return message{}, fmt.Errorf("%s: \"message\" is empty", c.typ)
	}
	return message{text: text, images: images}, nil
}

// imageTypes are the image types the Messages API takes.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// readImages reads "images": pi's ImageContent ({type:"image", data,
// mimeType}), or the {source:{type:"base64", mediaType|media_type, data}}
// form some forks use.
func readImages(c command) ([]claudecli.Image, error) {
	v := c.raw.Get("images")
	if !v.Exists() || v.Type == gjson.Null {
		return nil, nil
	}
	if !v.IsArray() {
		return nil, fmt.Errorf("%s: \"images\" must be an array, got %s", c.typ, jsonKind(v))
	}
	var out []claudecli.Image
	for i, im := range v.Array() {
		data, mime := im.Get("data").String(), im.Get("mimeType").String()
		if src := im.Get("source"); src.IsObject() {
			data = src.Get("data").String()
			mime = src.Get("mediaType").String()
			if mime == "" {
				mime = src.Get("media_type").String()
			}
		}
		switch {
		case !im.IsObject():
			return nil, fmt.Errorf("%s: images[%d] must be an object", c.typ, i)
		case data == "":
			return nil, fmt.Errorf("%s: images[%d] has no base64 \"data\"", c.typ, i)
		case !imageTypes[mime]:
			return nil, fmt.Errorf("%s: images[%d] has mimeType %q; use image/png, image/jpeg, image/gif or image/webp", c.typ, i, mime)
		}
		if _, err := base64.StdEncoding.DecodeString(data); err != nil {
			return nil, fmt.Errorf("%s: images[%d] data is not base64: %v", c.typ, i, err)
		}
		out = append(out, claudecli.Image{Data: data, MimeType: mime})
	}
	return out, nil
}

// Queue modes, as pi's.
const (
	modeAll        = "all"
	modeOneAtATime = "one-at-a-time"
)

// setMode handles set_steering_mode and set_follow_up_mode.
func (s *server) setMode(c command, dst *string) {
	mode, err := c.str("mode")
	if err == nil && mode != modeAll && mode != modeOneAtATime {
		err = fmt.Errorf("%s: mode must be %q or %q, got %q", c.typ, modeAll, modeOneAtATime, mode)
	}
	if err != nil {
		s.w.send(errResponse(c.id, c.typ, err.Error()))
		return
	}
	s.mu.Lock()
	*dst = mode
	s.mu.Unlock()
	s.w.send(okResponse(c.id, c.typ, nil))
}

func (s *server) setInterruptMode(c command) {
	mode, err := c.str("mode")
	if err == nil && mode != "immediate" && mode != "wait" {
		err = fmt.Errorf("%s: mode must be \"immediate\" or \"wait\", got %q", c.typ, mode)
	}
	if err != nil {
		s.w.send(errResponse(c.id, c.typ, err.Error()))
		return
	}
	s.mu.Lock()
	s.interruptMode = mode
	s.mu.Unlock()
	s.w.send(okResponse(c.id, c.typ, nil))
}

// enqueue handles steer and follow_up (and prompt with streamingBehavior):
// while a prompt runs the message waits in its queue; when idle it runs as
// a prompt.
func (s *server) enqueue(c command, steer bool) {
	s.withMessage(c, func(m message) {
		if steer {
			s.steerQ = append(s.steerQ, m)
			if s.run.turn != nil {
				s.handOver(s.run)
			}
		} else {
			s.followQ = append(s.followQ, m)
		}
		s.w.send(okResponse(c.id, c.typ, nil))
	})
}

// withMessage reads c's message (answering c when it is bad); when idle it
// runs the message as a prompt, else it calls busy with s.mu held.
func (s *server) withMessage(c command, busy func(message)) {
	m, err := readMessage(c)
	if err != nil {
		s.w.send(errResponse(c.id, c.typ, err.Error()))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.run == nil {
		s.startRun(c, m)
		return
	}
	busy(m)
}

// queued reports whether messages wait. Called with s.mu held.
func (s *server) queued() bool { return len(s.steerQ) > 0 || len(s.followQ) > 0 }

// dequeue takes what the next turn delivers: steering messages first, then
// follow-ups, one or all of them by the queue's mode. Called with s.mu held.
func (s *server) dequeue() []message {
	take := func(q *[]message, mode string) []message {
		n := 1
		if mode == modeAll {
			n = len(*q)
		}
		out := append([]message(nil), (*q)[:n]...)
		*q = (*q)[n:]
		return out
	}
	switch {
	case len(s.steerQ) > 0:
		return take(&s.steerQ, s.steeringMode)
	case len(s.followQ) > 0:
		return take(&s.followQ, s.followUpMode)
	}
	return nil
}

// joined is the CLI's one user message for messages delivered together.
func joined(ms []message) message {
	if len(ms) == 1 {
		return ms[0]
	}
	var texts []string
	var images []claudecli.Image
	for _, m := range ms {
		if m.text != "" {
			texts = append(texts, m.text)
		}
		images = append(images, m.images...)
	}
	return message{text: strings.Join(texts, "\n\n"), images: images}
}
