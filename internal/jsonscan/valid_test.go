package jsonscan

import (
	"encoding/json"
	"fmt"
	"github.com/stretchr/testify/require"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// validSeeds are texts on both sides of every rule of the grammar; FuzzValid starts from them.
var validSeeds = []string{
	``, ` `, `null`, `true`, `false`, `nul`, `tru`, `falsey`, `nullx`, `"`, `""`, `"a`, `"\"`,
	`"\\"`, `"\/\b\f\n\r\t"`, `"\u00e9"`, `"\u00E9\uD83D\uDE00"`, `"\u00g9"`, `"\u12"`, `"\x"`,
	"\"\x01\"", "\"\x1f\"", "\"\x7f\xff\"", `"é"`, `0`, `-0`, `-`, `01`, `-01`, `1.`, `1.5`,
	`.5`, `1e`, `1e+`, `1e5`, `1E-5`, `1.5e+10`, `-12.5e3`, `+1`, `1x`, `1 2`, ` 1 `, "\t\r\n1\n",
	`{}`, `{ }`, `{"a":1}`, `{"a":1,}`, `{"a"}`, `{"a":}`, `{a:1}`, `{"a":1 "b":2}`, `{"a":1,"b":[]}`,
	`{"a" : { "b" : [ 1 , 2 ] } }`, `[]`, `[ ]`, `[1,]`, `[,1]`, `[1 2]`, `[[[]]]`, `[[[]]`, `[1]]`,
	`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"{\"text\":\"hi\"}"}],"structuredContent":{"text":"hi"}}}`,
	"[\x00]", "1\x00", "\xef\xbb\xbf1", "{\"a\":1}\x00",
}

func TestValid(t *testing.T) {
	t.Parallel()
	for _, in := range validSeeds {
		assert.Equal(t, json.Valid([]byte(in)), Valid([]byte(in)), "Valid(%q)", in)
	}
	// encoding/json's nesting limit: 10,000 arrays or objects, not one more.
	for _, open := range []string{"[", `{"a":`} {
		closer := map[string]string{"[": "]", `{"a":`: "}"}[open]
		for _, n := range []int{maxDepth, maxDepth + 1} {
			in := []byte(strings.Repeat(open, n) + "1" + strings.Repeat(closer, n))
			assert.Equal(t, json.Valid(in), Valid(in), "%d levels of %s", n, open)
			assert.Equal(t, n <= maxDepth, Valid(in), "%d levels of %s", n, open)
		}
	}
}

// FuzzValid checks that Valid answers as encoding/json.Valid does.
func FuzzValid(f *testing.F) {
	for _, s := range validSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			require.Fail(t, fmt.Sprintf("Valid(%q) = %v, encoding/json.Valid says %v", b, got, want))
		}
	})
}

func BenchmarkValid(b *testing.B) {
	msg := []byte(validSeeds[len(validSeeds)-5])
	b.Run("jsonscan", func(b *testing.B) {
		for b.Loop() {
			Valid(msg)
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		for b.Loop() {
			json.Valid(msg)
		}
	})
}
