package jsonscan

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestValueEnd(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want int // the index just past the value starting at 0
	}{
		{`"a\"b"  ,`, 6},
		{`{"k":[1,{"x":"}"}]} `, 19},
		{`[[],{}]`, 7},
		{`-12.5e3,`, 7},
		{`true}`, 4},
		{`{"unclosed":1`, -1},
		{`"unclosed`, -1},
		{``, -1},
	} {
		assert.Equal(t, tc.want, ValueEnd([]byte(tc.in), 0), "ValueEnd(%q)", tc.in)
	}
	assert.Equal(t, 3, SkipSpace([]byte(" \t\n{"), 0))
	assert.Equal(t, 2, StringEnd([]byte(`""x`), 0))
}

func TestIsInt64(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{
		"0": true, "-1": true, "9223372036854775807": true, "-9223372036854775808": true,
		"9223372036854775808": false, "1.5": false, "": false, "-": false, "1e3": false,
		"12345678901234567890": false,
	} {
		assert.Equal(t, want, IsInt64([]byte(in)), "IsInt64(%q)", in)
	}
}

func TestMembers(t *testing.T) {
	t.Parallel()
	type member struct{ key, val string }
	for _, tc := range []struct {
		in   string
		want []member
		ok   bool
	}{
		{`{}`, nil, true},
		{` { "a" : 1 , "b":{"c":[1,"}"]} } `, []member{{"a", "1"}, {"b", `{"c":[1,"}"]}`}}, true},
		{`{"a":"x","a":"y"}`, []member{{"a", `"x"`}, {"a", `"y"`}}, true},
		{`{"a\"b":1}`, nil, false},
		{`{"a":1} x`, []member{{"a", "1"}}, false},
		{`{"a":1,}`, []member{{"a", "1"}}, false},
		{`[1]`, nil, false},
		{``, nil, false},
	} {
		var got []member
		ok := Members([]byte(tc.in), func(k, v []byte) bool {
			got = append(got, member{string(k), string(v)})
			return true
		})
		assert.Falsef(t, ok != tc.ok || fmt.Sprint(got) != fmt.Sprint(tc.want), "Members(%q) = %v %v, want %v %v", tc.in, got, ok, tc.want, tc.ok)
	}
	n := 0
	assert.Falsef(t, Members([]byte(`{"a":1,"b":2}`), func(_, _ []byte) bool { n++; return false }) || n != 1, "a callback returning false stops the walk: %d calls", n)
}

func TestNextMember(t *testing.T) {
	type member struct{ key, val string }
	for _, tc := range []struct {
		in    string
		want  []member
		end   bool // NextMember reaches End
		valid bool // NextValidMember reaches End
	}{
		{`{}`, nil, true, true},
		{` {"a\"b" : [1, "]"] } `, []member{{`a\"b`, `[1, "]"]`}}, true, true},
		{`{"a":1,"b":2}`, []member{{"a", "1"}, {"b", "2"}}, true, true},
		{`{"a":1} x`, []member{{"a", "1"}}, false, false},
		{`{"a":1,}`, []member{{"a", "1"}}, false, false},
		{`{"a":01}`, []member{{"a", "01"}}, true, false},
		{`{"a":tru}`, []member{{"a", "tru"}}, true, false},
		{`{"a":"\x"}`, []member{{"a", `"\x"`}}, true, false},
		{`[1]`, nil, false, false},
		{`{"a" 1}`, nil, false, false},
		{``, nil, false, false},
	} {
		for _, valid := range []bool{false, true} {
			next, want := NextMember, tc.end
			if valid {
				next, want = NextValidMember, tc.valid
			}
			var got []member
			i := FirstMember([]byte(tc.in))
			for i >= 0 {
				var k, v []byte
				if k, v, i = next([]byte(tc.in), i); i != Bad {
					got = append(got, member{string(k), string(v)})
				}
			}
			if (i == End) != want || (want && fmt.Sprint(got) != fmt.Sprint(tc.want)) {
				t.Errorf("valid=%v %q: %v end=%v, want %v %v", valid, tc.in, got, i == End, tc.want, want)
			}
		}
	}
	if !HasEscape([]byte(`a\"b`)) || HasEscape([]byte("ab")) {
		t.Error("HasEscape")
	}
}
