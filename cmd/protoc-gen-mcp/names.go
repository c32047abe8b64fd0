package main

import (
	"regexp"
	"strings"
	"unicode"
)

// toolNamePattern is what MCP clients and the large model APIs accept as a tool name.
var toolNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// snakeCase turns an rpc name into the default tool name: GetForecast -> get_forecast,
// GetHTTPStatus -> get_http_status, ListV2Items -> list_v2_items.
func snakeCase(s string) string {
	rs := []rune(s)
	var b strings.Builder
	for i, r := range rs {
		if !unicode.IsUpper(r) {
			b.WriteRune(r)
			continue
		}
		if wordStart(rs, i) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// wordStart reports whether the capital rs[i] starts a new word, after a lowercase letter or
// a digit, or as the last capital of a run that a lowercase letter follows (HTTPStatus).
func wordStart(rs []rune, i int) bool {
	if i == 0 {
		return false
	}
	prev := rs[i-1]
	nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
	return unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower)
}

// unexport lowercases the leading capitals of a Go identifier so that it reads naturally:
// WeatherService -> weatherService, HTTPService -> httpService, API -> api.
func unexport(s string) string {
	rs := []rune(s)
	n := leadingToLower(rs)
	if n == 0 {
		return s
	}
	for i := 0; i < n; i++ {
		rs[i] = unicode.ToLower(rs[i])
	}
	return string(rs)
}

// leadingToLower is how many of an identifier's leading capitals unexport lowers: a single
// one, a whole all-caps identifier, or a run of them but its last when a lowercase letter
// follows (HTTPServer -> httpServer).
func leadingToLower(rs []rune) int {
	n := 0
	for n < len(rs) && unicode.IsUpper(rs[n]) {
		n++
	}
	if n > 1 && n < len(rs) && unicode.IsLower(rs[n]) {
		return n - 1
	}
	return n
}

// cleanComment turns a proto comment into description text: each line loses the one space
// after the comment marker and its trailing blanks, hard-wrapped lines of a paragraph are
// joined, paragraphs, list items and indented lines keep their line breaks, and buf lint
// directives are dropped.
func cleanComment(c string) string {
	var b strings.Builder
	prevBlank := true
	for _, line := range descriptionLines(c) {
		if line == "" {
			prevBlank = true
			continue
		}
		switch {
		case b.Len() == 0:
		case prevBlank:
			b.WriteString("\n\n")
		case startsBlock(line):
			b.WriteString("\n")
		default:
			b.WriteString(" ")
		}
		b.WriteString(line)
		prevBlank = false
	}
	return strings.TrimSpace(b.String())
}

// descriptionLines splits a proto comment into lines, each without the one space after the
// comment marker and its trailing blanks, buf lint directives left out.
func descriptionLines(c string) []string {
	var lines []string
	for _, line := range strings.Split(strings.TrimSuffix(c, "\n"), "\n") {
		line = strings.TrimRight(strings.TrimPrefix(line, " "), " \t")
		if !strings.HasPrefix(line, "buf:lint:") {
			lines = append(lines, line)
		}
	}
	return lines
}

// startsBlock reports whether a comment line begins a list item or an indented block, which
// must keep its line break.
func startsBlock(line string) bool {
	if strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t") {
		return true
	}
	for _, p := range []string{"- ", "* ", "+ "} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return startsNumberedItem(line)
}

// startsNumberedItem reports whether a line begins a numbered list item: digits, then "." or
// ")", then a space.
func startsNumberedItem(line string) bool {
	i := 0
	for i < len(line) && line[i] >= '0' && line[i] <= '9' {
		i++
	}
	return i > 0 && i+1 < len(line) && (line[i] == '.' || line[i] == ')') && line[i+1] == ' '
}

// scopeTokenPattern is RFC 6749 Section 3.3's scope-token: %x21 / %x23-5B / %x5D-7E.
var scopeTokenPattern = regexp.MustCompile(`^[\x21\x23-\x5B\x5D-\x7E]+$`)
