package hostlink

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/tidwall/gjson"
)

// Host URIs (omp's set_host_uri_schemes): the host serves URLs of its own
// schemes (db://…, notion://…), which omp's read and write tools resolve by
// asking it (host_uri_request, answered with host_uri_result). The CLI has
// no URL routing of its own, so the bridge gives the model two tools on the
// host's MCP server, beside the host's tools: host_uri_read {url} and, when
// a scheme is writable, host_uri_write {url, content}. Each call becomes a
// host_uri_request; a call the CLI withdraws becomes host_uri_cancel.

// URIScheme is one scheme the host serves (omp's
// RpcHostUriSchemeDefinition).
type URIScheme struct {
	Scheme      string
	Description string
	Writable    bool
	Immutable   bool
}

// The tools that carry host URI operations.
const (
	uriReadTool  = "host_uri_read"
	uriWriteTool = "host_uri_write"
)

var schemeRe = regexp.MustCompile(`^[a-z][a-z0-9+.-]*$`)

// reservedSchemes are URLs the CLI's own tools read (WebFetch, Read): a host
// cannot take them over.
var reservedSchemes = map[string]bool{"http": true, "https": true, "file": true, "data": true}

// ParseURISchemes reads set_host_uri_schemes' schemes (an array) and
// their names, lower case, in order; a scheme defined twice is its last
// definition, in the place of its first. The error is omp's.
func ParseURISchemes(v gjson.Result) ([]URIScheme, []string, error) {
	var schemes []URIScheme
	names := []string{}
	seen := map[string]int{}
	for _, d := range v.Array() {
		scheme := strings.ToLower(strings.TrimSpace(d.Get("scheme").String()))
		switch {
		case d.Get("scheme").Type != gjson.String || scheme == "":
			return nil, nil, errors.New("Host URI scheme must be a non-empty string") // omp's words
		case !schemeRe.MatchString(scheme):
			return nil, nil, fmt.Errorf("Host URI scheme contains invalid characters: %s", d.Get("scheme").String())
		case reservedSchemes[scheme]:
			return nil, nil, fmt.Errorf("Host URI scheme is reserved by the Claude CLI: %s://", scheme)
		}
		def := URIScheme{Scheme: scheme, Description: d.Get("description").String(),
			Writable: d.Get("writable").Bool(), Immutable: d.Get("immutable").Bool()}
		if i, ok := seen[scheme]; ok {
			schemes[i] = def // the last definition wins, as omp's
			continue
		}
		seen[scheme] = len(schemes)
		schemes, names = append(schemes, def), append(names, scheme)
	}
	return schemes, names, nil
}

// uriTools are the MCP tools for the host's schemes (none without any).
func uriTools(schemes []URIScheme) []map[string]any {
	if len(schemes) == 0 {
		return nil
	}
	var list, writable []string
	for _, sc := range schemes {
		d := sc.Scheme + "://"
		if sc.Description != "" {
			d += " (" + sc.Description + ")"
		}
		list = append(list, d)
		if sc.Writable {
			writable = append(writable, sc.Scheme+"://")
		}
	}
	urlParam := map[string]any{"type": "string", "description": "The URL, e.g. " + schemes[0].Scheme + "://…"}
	tools := []map[string]any{{"name": uriReadTool,
		"description": "Read a resource the user's application serves, by URL. Its schemes: " + strings.Join(list, ", ") + ".",
		"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"url": urlParam}, "required": []string{"url"}}}}
	if len(writable) > 0 {
		tools = append(tools, map[string]any{"name": uriWriteTool,
			"description": "Write text to a resource the user's application serves, by URL: " + strings.Join(writable, ", ") + ".",
			"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"url": urlParam,
				"content": map[string]any{"type": "string", "description": "The whole new text."}}, "required": []string{"url", "content"}}})
	}
	for _, t := range tools {
		t["_meta"] = map[string]any{"anthropic/alwaysLoad": true}
	}
	return tools
}

// uriScheme is the scheme the host serves by that (lower-case) name.
func (h *Link) uriScheme(scheme string) (URIScheme, bool) {
	_, schemes := h.cfg.Served()
	var def *URIScheme
	for i, sc := range schemes {
		if sc.Scheme == scheme {
			def = &schemes[i]
		}
	}
	if def == nil {
		return URIScheme{}, false
	}
	return *def, true
}

// callURITool runs host_uri_read or host_uri_write: a host_uri_request,
// answered by host_uri_result, as MCP's CallToolResult.
func (h *Link) callURITool(ctx context.Context, name string, args gjson.Result) map[string]any {
	fail := func(msg string) map[string]any { return TextResult(msg, true) }
	op := "read"
	if name == uriWriteTool {
		op = "write"
	}
	raw := args.Get("url").String()
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return fail(fmt.Sprintf("%q is not a URL", raw))
	}
	def, served := h.uriScheme(strings.ToLower(u.Scheme))
	writable := served && def.Writable
	switch {
	case !served:
		return fail("The application serves no " + u.Scheme + ":// URLs")
	case op == "write" && !writable:
		return fail("The application's " + u.Scheme + ":// URLs are read-only")
	}
	id, w, ctx, done := h.register(ctx, "uri_", 1)
	defer done()
	req := hostURIRequestJSON{Type: "host_uri_request", ID: id, Operation: op, URL: raw}
	if op == "write" {
		content := args.Get("content").String()
		req.Content = &content
	}
	h.cfg.Send(req)
	select {
	case a := <-w.ch:
		if a.Get("isError").Bool() {
			msg := a.Get("error").String()
			if msg == "" {
				msg = a.Get("content").String()
			}
			if msg == "" {
				msg = fmt.Sprintf("Host URI %s failed for %s", op, raw)
			}
			return fail(msg)
		}
		if op == "write" {
			return TextResult("Wrote "+raw, false)
		}
		text := a.Get("content").String()
		if notes := a.Get("notes").Array(); len(notes) > 0 {
			var ns []string
			for _, n := range notes {
				ns = append(ns, n.String())
			}
			text += "\n\n[" + strings.Join(ns, "; ") + "]"
		}
		return TextResult(text, false)
	case <-ctx.Done():
		h.cfg.Send(hostURICancelJSON{Type: "host_uri_cancel", ID: h.Next("uri_cancel_"), TargetID: id})
		return fail(fmt.Sprintf("Host URI %s for %s was aborted", op, raw))
	}
}
