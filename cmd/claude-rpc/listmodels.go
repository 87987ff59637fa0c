package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/claude-rpc/claude-rpc/bridge"
)

// pi's --list-models [search]: the table pi 1.6.0 prints (its
// dist/cli/list-models.js), made from what get_available_models answers.
// Web hosts (pi-web, open-design's daemon) run `pi --list-models` and read
// this table for their model picker, so the header, the columns, their
// alignment, the fuzzy search and the order are pi's, to the space.

// listModelsGiven is the config key that says --list-models was given.
const listModelsGiven = "list-models-given"

// listModelsTimeout bounds asking the CLI for its models, as pi bounds its
// own listing (AbortSignal.timeout(15_000)). The info cache answers at once
// when it has this CLI's models.
const listModelsTimeout = 15 * time.Second

// listModels serves get_available_models once, in process (the info cache's
// models when it has them, else the CLI's answer, as the bridge answers a
// host), and prints the models matching search as pi prints them. It
// returns the exit status: 0 as pi, also for no match; 1 when the CLI could
// not be asked.
func listModels(opts bridge.Options, search string, timeout time.Duration, stdout, stderr io.Writer) int {
	models, err := availableModels(opts, timeout)
	if err != nil {
		fmt.Fprintf(stderr, "claude-rpc: --list-models: %v\n", err)
		return 1
	}
	fmt.Fprint(stdout, modelTable(models, search))
	return 0
}

// listedModel is what the table shows of one of get_available_models'
// models.
type listedModel struct {
	Provider      string   `json:"provider"`
	ID            string   `json:"id"`
	ContextWindow int64    `json:"contextWindow"`
	MaxTokens     int64    `json:"maxTokens"`
	Reasoning     bool     `json:"reasoning"`
	Input         []string `json:"input"`
}

// availableModels runs the bridge on pipes for one get_available_models
// call. No CLI process is started ahead (no prewarm): the answer comes from
// the info cache, else from one query process, which the bridge ends when
// it shuts down, at the answer or after timeout.
func availableModels(opts bridge.Options, timeout time.Duration) ([]listedModel, error) {
	opts.Prewarm = false
	opts.PiSessions = false // no session: a question for the CLI
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- bridge.Serve(ctx, inR, outW, opts)
		_ = outW.Close()
	}()
	const id = "claude-rpc-list-models"
	go func() {
		// Written once ready is (the writer may block until read).
		_, _ = io.WriteString(inW, `{"id":"`+id+`","type":"get_available_models"}`+"\n")
	}()
	var answer gjson.Result
	sc := bufio.NewScanner(outR)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		f := gjson.ParseBytes(sc.Bytes())
		if f.Get("type").String() == "response" && f.Get("id").String() == id {
			answer = f
			break
		}
	}
	_ = inW.Close() // the bridge shuts down
	go func() {
		for sc.Scan() { // drain whatever else it writes
		}
	}()
	err := <-served
	switch {
	case !answer.Get("success").Bool() && ctx.Err() != nil:
		return nil, fmt.Errorf("the Claude CLI did not list its models within %v", timeout)
	case !answer.Exists() && err != nil:
		return nil, err
	case !answer.Exists():
		return nil, errors.New("the bridge ended without listing the models")
	case !answer.Get("success").Bool():
		return nil, errors.New(answer.Get("error").String())
	}
	var data struct {
		Models []listedModel `json:"models"`
	}
	if err := json.Unmarshal([]byte(answer.Get("data").Raw), &data); err != nil {
		return nil, fmt.Errorf("reading the models: %w", err)
	}
	return data.Models, nil
}

// noModelsMessage is printed, as pi prints "No models available. …", when
// the CLI lists no model.
const noModelsMessage = "No models available. Log the Claude CLI in (run `claude`, then /login) or set ANTHROPIC_API_KEY.\n"

// modelTable is pi's --list-models output for models and search: the
// models whose "provider id" fuzzy-matches every word of search (all when
// search is blank), sorted by provider then id, in columns two spaces
// apart, each padded to its widest cell (the last one too).
func modelTable(models []listedModel, search string) string {
	if len(models) == 0 {
		return noModelsMessage
	}
	var rows [][]string
	for _, m := range models {
		if search != "" && !fuzzyMatchAll(search, m.Provider+" "+m.ID) {
			continue
		}
		rows = append(rows, []string{m.Provider, m.ID, tokenCount(m.ContextWindow), tokenCount(m.MaxTokens),
			yesNo(m.Reasoning), yesNo(slices.Contains(m.Input, "image"))})
	}
	if len(rows) == 0 {
		return fmt.Sprintf("No models matching %q\n", search)
	}
	slices.SortStableFunc(rows, func(a, b []string) int {
		if c := localeCompare(a[0], b[0]); c != 0 {
			return c
		}
		return localeCompare(a[1], b[1])
	})
	header := []string{"provider", "model", "context", "max-out", "thinking", "images"}
	widths := make([]int, len(header))
	for _, r := range append([][]string{header}, rows...) {
		for i, cell := range r {
			widths[i] = max(widths[i], jsLength(cell))
		}
	}
	var b strings.Builder
	for _, r := range append([][]string{header}, rows...) {
		for i, cell := range r {
			if i > 0 {
				b.WriteString("  ")
			}
			b.WriteString(cell)
			b.WriteString(strings.Repeat(" ", widths[i]-jsLength(cell)))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

// jsLength is a string's length as JavaScript counts it (UTF-16 code
// units), which pi's padEnd pads to.
func jsLength(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r > 0xFFFF {
			n++
		}
	}
	return n
}

// tokenCount is pi's formatTokenCount: 200000 → "200K", 1000000 → "1M",
// 1250000 → "1.3M" (one decimal, as JavaScript's toFixed(1)).
func tokenCount(n int64) string {
	switch {
	case n >= 1_000_000:
		return scaled(float64(n)/1_000_000) + "M"
	case n >= 1_000:
		return scaled(float64(n)/1_000) + "K"
	}
	return strconv.FormatInt(n, 10)
}

// scaled is x as pi writes a scaled count: whole, or toFixed(1).
func scaled(x float64) string {
	if x == math.Trunc(x) {
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	// toFixed rounds the double's exact value, as FormatFloat does, but an
	// exact tie (x.25, x.75) goes up where FormatFloat goes to even.
	if q := x * 4; q == math.Trunc(q) {
		return strconv.FormatFloat(math.Floor(x*10+0.5)/10, 'f', 1, 64)
	}
	return strconv.FormatFloat(x, 'f', 1, 64)
}

// fuzzyMatchAll is pi-tui's fuzzyFilter for one item: the query's words
// (split at white space and "/") must each match text.
func fuzzyMatchAll(query, text string) bool {
	words := strings.FieldsFunc(strings.TrimSpace(query), func(r rune) bool { return unicode.IsSpace(r) || r == '/' })
	for _, w := range words {
		if !fuzzyMatch(w, text) {
			return false
		}
	}
	return true
}

// Letters then digits, or digits then letters: pi-tui also tries such a
// word swapped ("opus4" as "4opus").
var (
	lettersDigits = regexp.MustCompile(`^([a-z]+)([0-9]+)$`)
	digitsLetters = regexp.MustCompile(`^([0-9]+)([a-z]+)$`)
)

// fuzzyMatch is pi-tui's fuzzyMatch, as far as it decides a match (its
// score only orders the matches, and --list-models sorts them by name):
// the word's characters appear in text in order, case ignored; else the
// word with its letters and digits swapped does.
func fuzzyMatch(word, text string) bool {
	w, t := strings.ToLower(word), strings.ToLower(text)
	if inOrder(w, t) {
		return true
	}
	if m := lettersDigits.FindStringSubmatch(w); m != nil {
		return inOrder(m[2]+m[1], t)
	}
	if m := digitsLetters.FindStringSubmatch(w); m != nil {
		return inOrder(m[2]+m[1], t)
	}
	return false
}

// inOrder reports whether word's characters appear in text in order.
func inOrder(word, text string) bool {
	if jsLength(word) > jsLength(text) {
		return false
	}
	for _, r := range word {
		i := strings.IndexRune(text, r)
		if i < 0 {
			return false
		}
		text = text[i+utf8.RuneLen(r):]
	}
	return true
}

// asciiCollation is the order of the printable ASCII characters under
// JavaScript's localeCompare (ICU's root collation, Node.js 22): white
// space, punctuation and symbols, digits, then letters, a letter's two
// cases together.
const asciiCollation = " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789aAbBcCdDeEfFgGhHiIjJkKlLmMnNoOpPqQrRsStTuUvVwWxXyYzZ"

// localeCompare is pi's sort order (String.prototype.localeCompare) for
// the names it sorts: characters by asciiCollation's order, case aside;
// then, for names equal but for case, lower case first at the first
// difference. Other characters come after ASCII ones, by code point;
// control characters are ignored, as ICU ignores them.
func localeCompare(a, b string) int {
	pa, ca := collationKey(a)
	pb, cb := collationKey(b)
	if c := slices.Compare(pa, pb); c != 0 {
		return c
	}
	if c := slices.Compare(ca, cb); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

// collationKey is s's primary weights (one per character) and case bits
// (1 for upper case).
func collationKey(s string) (primary []int, upper []int) {
	for _, r := range s {
		switch {
		case r < 0x20 || r == 0x7f:
			continue
		case r < 0x7f:
			// A letter's two cases share the lower case's weight.
			primary = append(primary, strings.IndexRune(asciiCollation, unicode.ToLower(r)))
			upper = append(upper, boolInt(r >= 'A' && r <= 'Z'))
		default:
			primary = append(primary, len(asciiCollation)+int(r))
			upper = append(upper, boolInt(unicode.IsUpper(r)))
		}
	}
	return primary, upper
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
