package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pi16ListModels is what pi 1.6.0 printed for each search
// (testdata/pi16/list-models.txt), by search.
func pi16ListModels(t *testing.T) (order []string, out map[string]string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "pi16", "list-models.txt"))
	require.NoError(t, err)
	out = map[string]string{}
	section := regexp.MustCompile(`(?m)^=== \[(.*)\]\n((?s:.*?))rc=0\n`)
	for _, m := range section.FindAllStringSubmatch(string(b), -1) {
		order = append(order, m[1])
		out[m[1]] = m[2]
	}
	require.Len(t, order, 9, "the sections of list-models.txt")
	return order, out
}

// parseCount reads pi's "200K", "1M" back.
func parseCount(t *testing.T, s string) int64 {
	t.Helper()
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "M"):
		s, mult = strings.TrimSuffix(s, "M"), 1_000_000
	case strings.HasSuffix(s, "K"):
		s, mult = strings.TrimSuffix(s, "K"), 1_000
	}
	n, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err, s)
	return n * mult
}

// TestModelTableAsPi: for the models pi 1.6.0 listed, claude-rpc's table
// is pi's, byte for byte, for every search pi was run with: the header,
// the padding (the last column's too), the fuzzy search (words, "/",
// case, "5son" as "son5"), the order, "No models matching".
func TestModelTableAsPi(t *testing.T) {
	order, want := pi16ListModels(t)
	var models []listedModel
	lines := strings.Split(strings.TrimSuffix(want[""], "\n"), "\n")
	require.Greater(t, len(lines), 5)
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		require.Len(t, f, 6, l)
		m := listedModel{Provider: f[0], ID: f[1], ContextWindow: parseCount(t, f[2]), MaxTokens: parseCount(t, f[3]),
			Reasoning: f[4] == "yes", Input: []string{"text"}}
		if f[5] == "yes" {
			m.Input = append(m.Input, "image")
		}
		models = append(models, m)
	}
	// In another order than pi's: the table sorts them.
	slices.Reverse(models)
	for _, search := range order {
		assert.Equal(t, want[search], modelTable(models, search), "search %q", search)
	}
}

func TestModelTableColumns(t *testing.T) {
	models := []listedModel{
		{Provider: "anthropic", ID: "claude-b", ContextWindow: 1_250_000, MaxTokens: 999, Reasoning: false, Input: []string{"text"}},
		{Provider: "anthropic", ID: "claude-a-very-long-model-id", ContextWindow: 200_000, MaxTokens: 64_000, Reasoning: true, Input: []string{"text", "image"}},
	}
	assert.Equal(t, ""+
		"provider   model                        context  max-out  thinking  images\n"+
		"anthropic  claude-a-very-long-model-id  200K     64K      yes       yes   \n"+
		"anthropic  claude-b                     1.3M     999      no        no    \n",
		modelTable(models, ""))
	assert.Equal(t, noModelsMessage, modelTable(nil, "x"))
	assert.Equal(t, "No models matching \"a \\\"b\\\"\"\n", modelTable(models, `a "b"`))
}

// TestTokenCount: pi's formatTokenCount, as Node.js 22 computed it for
// these counts (toFixed(1) rounds 1150/1000 down, 1250/1000 up).
func TestTokenCount(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 1: "1", 999: "999", 1000: "1K", 1050: "1.1K", 1150: "1.1K",
		1250: "1.3K", 1750: "1.8K", 1999: "2.0K", 32000: "32K", 64000: "64K", 128000: "128K", 200000: "200K",
		999999: "1000.0K", 1000000: "1M", 1050000: "1.1M", 1150000: "1.1M", 1250000: "1.3M", 1500000: "1.5M",
		1750000: "1.8M", 2000000: "2M", 2250000: "2.3M"} {
		assert.Equal(t, want, tokenCount(n), "%d", n)
	}
}

// TestLocaleCompare: names sorted as Node.js 22's localeCompare sorted
// them.
func TestLocaleCompare(t *testing.T) {
	want := []string{"a", "A", "a_b", "a-1", "a-b", "a.b", "a1", "ab", "aB", "Ab",
		"claude-opus-4-5", "claude-opus-4-5-20251101", "claude-opus-4-5[1m]", "claude-opus-4-50"}
	got := slices.Clone(want)
	slices.Reverse(got)
	slices.SortFunc(got, localeCompare)
	assert.Equal(t, want, got)
	ascii := []rune(asciiCollation)
	for i := 1; i < len(ascii); i++ {
		assert.Negative(t, localeCompare(string(ascii[i-1]), string(ascii[i])), "%q before %q", ascii[i-1], ascii[i])
	}
}

func TestFuzzyMatch(t *testing.T) {
	for _, tc := range []struct {
		query, text string
		match       bool
	}{
		{"sonnet", "anthropic claude-sonnet-5-5", true},
		{"sonnet", "anthropic claude-opus-5-5", false},
		{"SON", "anthropic claude-sonnet-5-5", true},
		{"opus 4", "anthropic claude-sonnet-4-5", true}, // o, p (anthrOPic), u, s: in order
		{"opus 45", "anthropic claude-opus-5-5", false},
		{"anthropic/opus", "anthropic claude-opus-5-5", true},
		{"5son", "anthropic claude-sonnet-5-5", true}, // tried as son5
		{"son5x", "anthropic claude-sonnet-5-5", false},
		{"   ", "anything", true},
		{"", "anything", true},
		{"x", "", false},
	} {
		assert.Equal(t, tc.match, fuzzyMatchAll(tc.query, tc.text), "%q in %q", tc.query, tc.text)
	}
}

// TestListModelsSearchArgument: pi takes the argument after --list-models
// as its search unless it starts with "-" or "@".
func TestListModelsSearchArgument(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		search string
		rest   []string
	}{
		{[]string{"--list-models"}, " ", []string{}},
		{[]string{"--list-models", "sonnet"}, "sonnet", []string{}},
		{[]string{"--list-models", "opus 4", "extra"}, "opus 4", []string{"extra"}},
		{[]string{"--list-models", "--model", "opus"}, " ", []string{}},
		{[]string{"--list-models", "@file"}, " ", []string{"@file"}},
		{[]string{"--list-models=haiku"}, "haiku", []string{}},
		{[]string{"--list-models", ""}, "", []string{}},
	} {
		v, err := loadConfig(tc.args)
		require.NoError(t, err, "%v", tc.args)
		assert.True(t, v.GetBool(listModelsGiven), "%v", tc.args)
		assert.Equal(t, tc.search, v.GetString("list-models"), "%v", tc.args)
		assert.Equal(t, tc.rest, v.GetStringSlice("positional-args"), "%v", tc.args)
	}
	v, err := loadConfig([]string{"--mode", "rpc"})
	require.NoError(t, err)
	assert.False(t, v.GetBool(listModelsGiven))
}
