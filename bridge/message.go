package bridge

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
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
	// handed is the uuid it was last handed to the CLI with, when a run
	// that ended before the CLI started it queued it again.
	handed string
	// custom is an extension's message (sendMessage), which hosts see as
	// it is; the model gets its text as the user's.
	custom *transform.Message
}

// userMessage is the message in pi's shape: its text, then its images; an
// extension's message as the extension gave it.
func (m message) userMessage() transform.Message {
	if m.custom != nil {
		c := m.custom.Clone()
		return c
	}
	content := make([]transform.Content, 0, 1+len(m.images))
	if m.text != "" || len(m.images) == 0 {
		content = append(content, transform.TextContent(m.text))
	}
	for _, im := range m.images {
		if im.URL != "" {
			// pi's ImageContent has no URL form: the host sees the link.
			content = append(content, transform.TextContent(im.URL))
			continue
		}
		content = append(content, transform.Content{Type: "image", Data: im.Data, MimeType: im.MimeType})
	}
	return transform.UserMessage(content, nowMillis())
}

// customFromJSON is an extension's message as pi keeps it (sendMessage's
// argument, a custom_message entry): customType; content, a string or
// pi's blocks (none: empty, as pi normalizes it); display and details
// when given. Its timestamp is the caller's to set.
func customFromJSON(v gjson.Result) (transform.Message, error) {
	m := transform.Message{Role: transform.RoleCustom, CustomType: v.Get("customType").String()}
	switch c := v.Get("content"); {
	case c.Type == gjson.String:
		m.Content = []transform.Content{transform.TextContent(c.String())}
		m.ContentString = true
	case c.IsArray():
		if err := json.Unmarshal([]byte(c.Raw), &m.Content); err != nil {
			return m, fmt.Errorf("content: %w", err)
		}
	}
	if d := v.Get("display"); d.IsBool() {
		m.Display = new(d.Bool())
	}
	if d := v.Get("details"); d.Exists() && d.Type != gjson.Null {
		m.Details = json.RawMessage(d.Raw)
	}
	return m, nil
}

// readMessage reads a command's "message" and optional "images".
func readMessage(c *call) (message, error) {
	images, err := readImages(c)
	if err != nil {
		return message{}, err
	}
	text := c.str("message")
	if strings.TrimSpace(text) == "" && len(images) == 0 {
		// The API refuses an empty message; say so before a run starts.
		return message{}, fmt.Errorf("%s: \"message\" is empty", c.typ)
	}
	return message{text: text, images: images}, nil
}

// imageTypes are the image types the Messages API takes.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// readImages reads "images": pi's ImageContent ({type:"image", data,
// mimeType}), the {source:{type:"base64", mediaType|media_type, data}}
// form some forks use, or omp's {source:{type:"url", url}}.
func readImages(c *call) ([]claudecli.Image, error) {
	v := c.raw.Get("images")
	if !v.Exists() || v.Type == gjson.Null {
		return nil, nil
	}
	if !v.IsArray() {
		return nil, fmt.Errorf("%s: \"images\" must be an array, got %s", c.typ, jsonKind(v))
	}
	var out []claudecli.Image
	for i, im := range v.Array() {
		if src := im.Get("source"); src.Get("type").String() == "url" {
			// omp's URL form: the API fetches it.
			u, err := url.Parse(src.Get("url").String())
			if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				return nil, fmt.Errorf("%s: images[%d] has source.url %q; give an http(s) URL", c.typ, i, src.Get("url").String())
			}
			out = append(out, claudecli.Image{URL: u.String()})
			continue
		}
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

func (s *server) setSteeringMode(c *call) (any, error) { return s.setMode(c, true) }
func (s *server) setFollowUpMode(c *call) (any, error) { return s.setMode(c, false) }

// setMode handles set_steering_mode (steer) and set_follow_up_mode.
func (s *server) setMode(c *call, steer bool) (any, error) {
	mode := c.str("mode")
	if mode != modeAll && mode != modeOneAtATime {
		return nil, fmt.Errorf("%s: mode must be %q or %q, got %q", c.typ, modeAll, modeOneAtATime, mode)
	}
	s.runs.setMode(steer, mode)
	return nil, nil
}

// queued reports whether messages wait. On the runner's loop.
func (rn *runner) queued() bool { return len(rn.steerQ) > 0 || len(rn.followQ) > 0 }

// dequeue takes what the next turn delivers: steering messages first, then
// follow-ups, one or all of them by the queue's mode. On the runner's
// loop.
func (rn *runner) dequeue() []message {
	switch {
	case len(rn.steerQ) > 0:
		return rn.take(&rn.steerQ, rn.steering)
	case len(rn.followQ) > 0:
		return rn.take(&rn.followQ, rn.followUp)
	}
	return nil
}

// take takes one message of q, or all of them in mode all. On the
// runner's loop.
func (rn *runner) take(q *[]message, mode string) []message {
	n := 1
	if mode == modeAll {
		n = len(*q)
	}
	out := append([]message(nil), (*q)[:n]...)
	*q = (*q)[n:]
	return out
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
