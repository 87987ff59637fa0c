package claudecli

import "bytes"

// cleanTerminalLine removes what a terminal adds to a line of output:
// escape sequences (CSI "ESC [ … final", OSC "ESC ] … BEL or ESC \", and
// two-byte "ESC x") and stray carriage returns. It works in place.
func cleanTerminalLine(line []byte) []byte {
	if bytes.IndexByte(line, 0x1b) < 0 && bytes.IndexByte(line, '\r') < 0 {
		return line
	}
	out := line[:0]
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\r':
			continue
		case c != 0x1b:
			out = append(out, c)
			continue
		case i+1 >= len(line):
			continue
		}
		switch line[i+1] {
		case '[': // CSI: parameters and intermediates, then a final byte 0x40–0x7e
			j := i + 2
			for j < len(line) && (line[j] < 0x40 || line[j] > 0x7e) {
				j++
			}
			i = j
		case ']': // OSC: until BEL or ESC \
			j := i + 2
			for j < len(line) && line[j] != 0x07 && !(line[j] == 0x1b && j+1 < len(line) && line[j+1] == '\\') {
				j++
			}
			if j < len(line) && line[j] == 0x1b {
				j++
			}
			i = j
		default:
			i++
		}
	}
	return out
}
