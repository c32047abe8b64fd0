package main

import "strings"

// The patterns below say in a regular expression what protojson accepts, so that a schema
// never accepts what the server refuses: 64-bit integers within their range, map keys within
// their key type's range, timestamps within years 1 to 9999, durations within ±10,000 years,
// and field masks in lowerCamelCase. They use only the regular-expression syntax common to
// ECMA-262 and RE2 (no lookaround), so that every validator reads them alike.

// upTo is an alternation matching the decimal integers 1 to max, without leading zeros.
func upTo(max string) string {
	var alts []string
	if n := len(max); n > 1 {
		// Every number with fewer digits.
		alts = append(alts, "[1-9]"+repeatDigits(0, n-2))
	}
	for i := 0; i < len(max); i++ {
		lo := byte('0')
		if i == 0 {
			lo = '1'
		}
		hi := max[i] - 1
		if hi < lo {
			continue
		}
		alts = append(alts, max[:i]+digitClass(lo, hi)+repeatDigits(len(max)-i-1, len(max)-i-1))
	}
	alts = append(alts, max)
	return strings.Join(alts, "|")
}

func digitClass(lo, hi byte) string {
	if lo == hi {
		return string(lo)
	}
	return "[" + string(lo) + "-" + string(hi) + "]"
}

// repeatDigits matches min to max decimal digits.
func repeatDigits(min, max int) string {
	switch {
	case max == 0:
		return ""
	case min == max && max == 1:
		return "[0-9]"
	case min == max:
		return "[0-9]{" + itoa(min) + "}"
	}
	return "[0-9]{" + itoa(min) + "," + itoa(max) + "}"
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// signedRange matches the integers from -(max+1) to max: a two's complement type's range.
func signedRange(max, minAbs string) string {
	return "^(0|-?(" + upTo(max) + ")|-" + minAbs + ")$"
}

// unsignedRange matches the integers from 0 to max.
func unsignedRange(max string) string {
	return "^(0|" + upTo(max) + ")$"
}

var (
	int32Pattern  = signedRange(maxInt32, "2147483648")
	uint32Pattern = unsignedRange(maxUint32)
	int64Pattern  = signedRange(maxInt64, "9223372036854775808")
	uint64Pattern = unsignedRange(maxUint64)

	// durationPattern: protojson accepts at most 315,576,000,000 seconds (10,000 years) and
	// up to nine fractional digits.
	durationPattern = `^-?(0|` + upTo("315576000000") + `)(\.[0-9]{1,9})?s$`

	// timestampPattern: RFC 3339 as protojson reads it, years 0001 to 9999, an upper-case T
	// and Z, up to nine fractional digits.
	timestampPattern = `^([0-9]{3}[1-9]|[0-9]{2}[1-9][0-9]|[0-9][1-9][0-9]{2}|[1-9][0-9]{3})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])` +
		`T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`

	// fieldMaskPattern: comma-separated paths of lowerCamelCase names, which protojson turns
	// into snake_case field names (it refuses underscores).
	fieldMaskPattern = `^([a-z][a-zA-Z0-9]*(\.[a-z][a-zA-Z0-9]*)*(,[a-z][a-zA-Z0-9]*(\.[a-z][a-zA-Z0-9]*)*)*)?$`
)
