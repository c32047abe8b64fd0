package jsonscan

// maxDepth is encoding/json's limit on nested arrays and objects: its Valid rejects deeper.
const maxDepth = 10000

// Valid reports whether b is one JSON value with optional white space around it: the grammar
// of RFC 8259 and the nesting limit that encoding/json.Valid applies, with the same answer for
// every input (like it, it does not check that strings are UTF-8). It reads the text in
// one pass of plain loops, where encoding/json's scanner calls a state function per byte.
func Valid(b []byte) bool {
	i := validValue(b, SkipSpace(b, 0), 0)
	return i >= 0 && SkipSpace(b, i) == len(b)
}

// ValidValueEnd is ValueEnd for text not yet known to be valid: the index just past the JSON
// value that starts at b[i], a member of an object or an element of an array, or -1 if the text
// there is not a valid value. A scanner that reads the rest of the text around such values
// itself checks as much as Valid would, in the same pass.
func ValidValueEnd(b []byte, i int) int { return validValue(b, i, 1) }

// ValidStringEnd is StringEnd for text not yet known to be valid: -1 for a string with a
// control character or an escape JSON does not define.
func ValidStringEnd(b []byte, i int) int { return validStringEnd(b, i) }

// validValue returns the index just past the JSON value that starts at b[i], or -1 if there is
// none; depth is the number of arrays and objects it is inside.
func validValue(b []byte, i, depth int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '{':
		if depth >= maxDepth {
			return -1
		}
		i = SkipSpace(b, i+1)
		if i < len(b) && b[i] == '}' {
			return i + 1
		}
		for {
			if i >= len(b) || b[i] != '"' {
				return -1
			}
			if i = validStringEnd(b, i); i < 0 {
				return -1
			}
			if i = SkipSpace(b, i); i >= len(b) || b[i] != ':' {
				return -1
			}
			if i = validValue(b, SkipSpace(b, i+1), depth+1); i < 0 {
				return -1
			}
			if i = SkipSpace(b, i); i >= len(b) {
				return -1
			}
			switch b[i] {
			case '}':
				return i + 1
			case ',':
				i = SkipSpace(b, i+1)
			default:
				return -1
			}
		}
	case '[':
		if depth >= maxDepth {
			return -1
		}
		i = SkipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1
		}
		for {
			if i = validValue(b, i, depth+1); i < 0 {
				return -1
			}
			if i = SkipSpace(b, i); i >= len(b) {
				return -1
			}
			switch b[i] {
			case ']':
				return i + 1
			case ',':
				i = SkipSpace(b, i+1)
			default:
				return -1
			}
		}
	case '"':
		return validStringEnd(b, i)
	case 't':
		return validLiteral(b, i, "true")
	case 'f':
		return validLiteral(b, i, "false")
	case 'n':
		return validLiteral(b, i, "null")
	default:
		return validNumber(b, i)
	}
}

// validLiteral returns the index just past lit at b[i], or -1.
func validLiteral(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// validStringEnd returns the index just past the valid string that starts at b[i] ('"'), or -1:
// no control characters, and only the escapes JSON defines.
func validStringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return j + 1
		case c < 0x20:
			return -1
		case c == '\\':
			j++
			if j >= len(b) {
				return -1
			}
			switch b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-j <= 4 {
					return -1
				}
				for _, h := range b[j+1 : j+5] {
					if !isHex(h) {
						return -1
					}
				}
				j += 4
			default:
				return -1
			}
		}
	}
	return -1
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// validNumber returns the index just past the number that starts at b[i], or -1:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	if i >= len(b) || b[i] < '0' || b[i] > '9' {
		return -1
	}
	if b[i] == '0' {
		i++
	} else {
		i = digits(b, i)
	}
	if i < len(b) && b[i] == '.' {
		if i++; i >= len(b) || b[i] < '0' || b[i] > '9' {
			return -1
		}
		i = digits(b, i)
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		if i++; i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return -1
		}
		i = digits(b, i)
	}
	return i
}

// digits returns the index of the first byte at or after i that is not a decimal digit.
func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}
