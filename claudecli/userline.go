package claudecli

import (
	"bytes"
	"encoding/json"
)

// Image is an image attached to a user message: base64 data and its MIME
// type, or a URL the API fetches.
type Image struct {
	Data     string
	MimeType string
	URL      string // set instead of Data and MimeType
}

// UserLine encodes a user message as one line of the CLI's stream-json
// input, newline included. Text-only messages are sent as a plain string;
// with images, as content blocks.
func UserLine(text string, images []Image) []byte { return UserLineID(text, images, "") }

// UserLineID is [UserLine] with the message's uuid. The CLI reports the
// progress of a message that has one in command_lifecycle lines (queued,
// started, completed, cancelled), which is how a message handed to it
// mid-turn is followed (see [Steerer]).
func UserLineID(text string, images []Image, uuid string) []byte {
	type source struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type,omitempty"`
		Data      string `json:"data,omitempty"`
		URL       string `json:"url,omitempty"`
	}
	type block struct {
		Type   string  `json:"type"`
		Text   string  `json:"text,omitempty"`
		Source *source `json:"source,omitempty"`
	}
	var content any = text
	if len(images) > 0 {
		blocks := make([]block, 0, len(images)+1)
		for _, im := range images {
			src := &source{Type: "base64", MediaType: im.MimeType, Data: im.Data}
			if im.URL != "" {
				src = &source{Type: "url", URL: im.URL}
			}
			blocks = append(blocks, block{Type: "image", Source: src})
		}
		if text != "" {
			blocks = append(blocks, block{Type: "text", Text: text})
		}
		content = blocks
	}
	line := struct {
		Type    string `json:"type"`
		Message struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"message"`
		SessionID       string  `json:"session_id"`
		ParentToolUseID *string `json:"parent_tool_use_id"`
		UUID            string  `json:"uuid,omitempty"`
	}{Type: "user", SessionID: "default", UUID: uuid}
	line.Message.Role = "user"
	line.Message.Content = content
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)                 // the CLI reads the text as it is either way; keep it short
	if err := enc.Encode(line); err != nil { // strings and slices of strings always encode
		panic("claudecli: encoding user line: " + err.Error())
	}
	return buf.Bytes() // Encode ends it with the newline
}
