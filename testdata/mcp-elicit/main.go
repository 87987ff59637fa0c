// Command mcp-elicit is a stdio MCP server for the end-to-end tests: its
// one tool, ask, sends elicitation/create to its client (the Claude CLI)
// and returns the client's answer as its result, so the model (the fake
// API) sees what the user answered.
//
// ask's arguments are elicitation/create's params: {message,
// requestedSchema} asks by form; {mode:"url", message, url, elicitationId}
// asks the user to open a URL. The result is one text block: the
// answer's JSON ({"action":..., "content":...}), or "elicitation error:
// <message>" (isError) when the client answered with an error.
//
// It speaks MCP's stdio transport: one JSON-RPC message a line each way.
// It logs to stderr what the client declared (its elicitation
// capability).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
)

// message is a JSON-RPC message of either side.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// server writes whole lines to stdout and matches the client's responses
// to its own requests by id.
type server struct {
	mu      sync.Mutex
	out     *bufio.Writer
	seq     int
	waiting map[string]chan message
}

func main() {
	s := &server{out: bufio.NewWriter(os.Stdout), waiting: map[string]chan message{}}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	for in.Scan() {
		var m message
		if err := json.Unmarshal(in.Bytes(), &m); err != nil {
			fmt.Fprintln(os.Stderr, "mcp-elicit: bad line:", err)
			continue
		}
		switch {
		case m.Method == "" && len(m.ID) > 0: // a response to our request
			s.mu.Lock()
			ch := s.waiting[string(m.ID)]
			delete(s.waiting, string(m.ID))
			s.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		case len(m.ID) == 0: // a notification
		default:
			go s.handle(m)
		}
	}
}

func (s *server) write(v any) {
	b, _ := json.Marshal(v)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out.Write(append(b, '\n'))
	s.out.Flush()
}

func (s *server) reply(id json.RawMessage, result any) {
	s.write(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

// request sends a request to the client and waits for its response.
func (s *server) request(method string, params json.RawMessage) message {
	s.mu.Lock()
	s.seq++
	id := strconv.Quote("elicit-" + strconv.Itoa(s.seq))
	ch := make(chan message, 1)
	s.waiting[id] = ch
	s.mu.Unlock()
	s.write(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": method, "params": params})
	return <-ch
}

func (s *server) handle(m message) {
	switch m.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string          `json:"protocolVersion"`
			Capabilities    json.RawMessage `json:"capabilities"`
		}
		_ = json.Unmarshal(m.Params, &p)
		fmt.Fprintf(os.Stderr, "mcp-elicit: client capabilities %s\n", p.Capabilities)
		s.reply(m.ID, map[string]any{"protocolVersion": p.ProtocolVersion,
			"capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo":   map[string]string{"name": "mcp-elicit", "version": "1"}})
	case "tools/list":
		s.reply(m.ID, map[string]any{"tools": []map[string]any{{
			"name":        "ask",
			"description": "Asks the user (elicitation/create with these params) and returns the answer.",
			"inputSchema": map[string]any{"type": "object", "properties": map[string]any{
				"message":         map[string]string{"type": "string"},
				"mode":            map[string]string{"type": "string"},
				"url":             map[string]string{"type": "string"},
				"elicitationId":   map[string]string{"type": "string"},
				"requestedSchema": map[string]string{"type": "object"},
			}},
			"_meta": map[string]any{"anthropic/alwaysLoad": true},
		}}})
	case "tools/call":
		var p struct {
			Arguments json.RawMessage `json:"arguments"`
		}
		_ = json.Unmarshal(m.Params, &p)
		a := s.request("elicitation/create", p.Arguments)
		text, isError := string(a.Result), false
		if a.Error != nil {
			text, isError = "elicitation error: "+a.Error.Message, true
		}
		s.reply(m.ID, map[string]any{"content": []map[string]string{{"type": "text", "text": text}}, "isError": isError})
	case "ping":
		s.reply(m.ID, map[string]any{})
	default:
		s.write(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": rpcError{Code: -32601, Message: "method not found: " + m.Method}})
	}
}
