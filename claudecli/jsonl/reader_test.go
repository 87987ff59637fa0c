package jsonl

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readAll reads every line, writing errors as "ERR".
func readAll(t *testing.T, r io.Reader, max int) []string {
	t.Helper()
	lr := NewReader(r, max)
	var out []string
	for {
		b, err := lr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if errors.Is(err, ErrLineTooLong) {
			out = append(out, "ERR")
			continue
		}
		require.NoError(t, err)
		out = append(out, string(b))
	}
}

func TestReader(t *testing.T) {
	long := strings.Repeat("x", 200_000)
	tests := []struct {
		name string
		in   string
		max  int
		want []string
	}{
		{"lines", "a\nb\n", 0, []string{"a", "b"}},
		{"crlf", "a\r\nb\r\n", 0, []string{"a", "b"}},
		{"lone CR is kept inside a line", "a\rb\n", 0, []string{"a\rb"}},
		{"last line without LF", "a\nb", 0, []string{"a", "b"}},
		{"empty lines", "\n\n", 0, []string{"", ""}},
		{"empty input", "", 0, nil},
		{"U+2028 is not a line end", "a\u2028b\n", 0, []string{"a\u2028b"}},
		{"long line under the cap", long + "\n", 300_000, []string{long}},
		{"line at the cap", "abcd\n", 4, []string{"abcd"}},
		{"line at the cap with CRLF", "abcd\r\n", 4, []string{"abcd"}},
		{"line over the cap is skipped", "abcde\nok\n", 4, []string{"ERR", "ok"}},
		{"huge line over the cap, then more", "a\n" + long + "\nb\n" + long + "\nc", 100_000, []string{"a", "ERR", "b", "ERR", "c"}},
		{"over the cap at EOF", "a\n" + long, 100_000, []string{"a", "ERR"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, readAll(t, strings.NewReader(tt.in), tt.max))
			// The same, one byte per Read.
			assert.Equal(t, tt.want, readAll(t, iotest.OneByteReader(strings.NewReader(tt.in)), tt.max))
		})
	}
}

func TestReaderReportsSize(t *testing.T) {
	lr := NewReader(strings.NewReader(strings.Repeat("y", 5000)+"\n"), 1000)
	_, err := lr.Next()
	require.ErrorIs(t, err, ErrLineTooLong)
	assert.Contains(t, err.Error(), "5000 bytes")
	assert.Contains(t, err.Error(), "limit of 1000")
}

func TestReaderReadError(t *testing.T) {
	boom := errors.New("boom")
	lr := NewReader(io.MultiReader(strings.NewReader("a\nb"), iotest.ErrReader(boom)), 0)
	b, err := lr.Next()
	require.NoError(t, err)
	assert.Equal(t, "a", string(b))
	_, err = lr.Next()
	assert.ErrorIs(t, err, boom)
}

func BenchmarkReader(b *testing.B) {
	line := strings.Repeat("z", 300) + "\n"
	in := strings.Repeat(line, 1000)
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		lr := NewReader(strings.NewReader(in), 0)
		for {
			if _, err := lr.Next(); err != nil {
				break
			}
		}
	}
}

// FuzzReader checks Reader against a plain reference: split on LF,
// drop one CR before it, a line longer than max is an error.
func FuzzReader(f *testing.F) {
	f.Add([]byte("a\r\nb\n\nc"), 3)
	f.Add([]byte(strings.Repeat("x", 70_000)+"\ny\n"), 65_000)
	f.Add([]byte("{\"type\":\"prompt\",\"message\":\"\u2028\"}\r\n"), 0)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if max <= 0 || max > 1<<20 {
			max = 1 << 20
		}
		var want []string
		parts := strings.Split(string(in), "\n")
		if parts[len(parts)-1] == "" {
			parts = parts[:len(parts)-1] // input ending in LF: no last line
		}
		for _, p := range parts {
			p = strings.TrimSuffix(p, "\r")
			if len(p) > max {
				p = "ERR"
			}
			want = append(want, p)
		}
		got := readAll(t, iotest.HalfReader(strings.NewReader(string(in))), max)
		if len(want) == 0 {
			want = nil
		}
		// A real line reading "ERR" is indistinguishable here; fine.
		assert.Equal(t, want, got)
	})
}

// TestNextOwned: lines from NextOwned stay intact after later reads, long
// and short; a line goes into the buffer it is given when it fits, and into
// a new one when it does not.
func TestNextOwned(t *testing.T) {
	long := strings.Repeat("x", 3<<20)
	lr := NewReader(strings.NewReader("a\n"+long+"\nb\n"+strings.Repeat("y", 3<<20)+"\nc\n"), 0)
	var got []string
	var lines [][]byte
	for {
		b, err := lr.NextOwned(nil)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		lines = append(lines, b)
	}
	for _, b := range lines {
		got = append(got, string(b))
	}
	assert.Equal(t, []string{"a", long, "b", strings.Repeat("y", 3<<20), "c"}, got)

	lr = NewReader(strings.NewReader("short\n"+long+"\nlast"), 0)
	buf := make([]byte, 0, 16)
	short, err := lr.NextOwned(buf)
	require.NoError(t, err)
	assert.Equal(t, "short", string(short))
	assert.Same(t, unsafe.SliceData(buf), unsafe.SliceData(short), "read into the buffer given")
	b, err := lr.NextOwned(buf[:0:len(buf)]) // too small: a new array
	require.NoError(t, err)
	assert.Equal(t, long, string(b))
	b, err = lr.NextOwned(nil)
	require.NoError(t, err)
	assert.Equal(t, "last", string(b))
	assert.Equal(t, "short", string(short), "the reader kept no reference to it")
}

// BenchmarkReaderLongLine reads lines as long as the CLI's assistant and
// result lines for a 2 MB reply: B/op is what one such line allocates.
func BenchmarkReaderLongLine(b *testing.B) {
	line := strings.Repeat("z", 2_034_996) + "\n"
	in := strings.Repeat(line, 2)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		lr := NewReader(strings.NewReader(in), 0)
		for {
			if _, err := lr.Next(); err != nil {
				break
			}
		}
	}
}

// TestReaderPieces reads long lines in pieces: joined, they are the lines;
// a line over the cap is skipped after its pieces; short lines and lines
// the filter refuses come whole.
func TestReaderPieces(t *testing.T) {
	long := `{"a":"` + strings.Repeat("x", 100_000) + `"}`
	refused := `[` + strings.Repeat("1,", 50_000) + `1]`
	tooLong := `{"b":"` + strings.Repeat("y", 300_000) + `"}`
	in := "{}\n" + long + "\r\n" + refused + "\n" + tooLong + "\n" + long
	lr := NewReader(iotest.OneByteReader(strings.NewReader(in)), 200_000)
	lr.SetPieces(64<<10, func(head []byte) bool { return head[0] == '{' })
	var got []string
	var cur []byte
	pieces := 0
	for {
		b, err := lr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		switch {
		case errors.Is(err, ErrPiece):
			cur = append(cur, b...)
			pieces++
			continue
		case errors.Is(err, ErrLineTooLong):
			got, cur = append(got, "ERR"), nil
			continue
		}
		require.NoError(t, err)
		got, cur = append(got, string(append(cur, b...))), nil
	}
	assert.Equal(t, []string{"{}", long, refused, "ERR", long}, got)
	assert.Greater(t, pieces, 4)
}
