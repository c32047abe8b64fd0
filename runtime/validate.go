package runtime

import (
	"errors"
	"strings"

	"google.golang.org/protobuf/proto"
)

// Validation of typed tool arguments beyond what protojson and the required-field contract
// check: a ToolSpec's Validate function (for generated code, the buf.validate rules of the
// request message, enforced by protovalidate through package bufvalidate). The runtime does
// not import protovalidate: a server whose protos use no buf.validate rules links none of it.

// Violation is one broken validation rule of a tool's arguments.
type Violation struct {
	// Field is the path of the field, in JSON names: "address.city", "items[2].name",
	// "labels[\"k\"]"; empty for a rule on the whole message.
	Field string
	// Rule identifies the rule, e.g. "int32.gte_lte" (optional).
	Rule string
	// Message says what is wrong, for the model to correct.
	Message string
}

// ValidationError is what a ToolSpec's Validate function returns for arguments that break
// rules: one Violation per broken rule. Its text lists each violation's field path and
// message, and is what the model reads in the tool error.
type ValidationError struct {
	Violations []Violation
}

// Error lists the violations: "days: value must be ... ; coordinates.latitude: ...".
func (e *ValidationError) Error() string {
	parts := make([]string, 0, len(e.Violations))
	for _, v := range e.Violations {
		switch {
		case v.Field == "":
			parts = append(parts, v.Message)
		default:
			parts = append(parts, v.Field+": "+v.Message)
		}
	}
	return strings.Join(parts, "; ")
}

// validateArgs runs a tool's Validate function on its decoded arguments. A panic in a
// validator is not the model's fault, but a wrong argument must still not reach the handler:
// it is reported as an error like any other.
func validateArgs(validate func(proto.Message) error, in proto.Message) (err error) {
	if validate == nil {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = errors.New("the arguments could not be validated")
		}
	}()
	return validate(in)
}
