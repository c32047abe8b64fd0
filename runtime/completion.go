package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// This file serves completion/complete (spec section "Completion"): the handlers of
// prompts and resource templates, and the completion of enum arguments from their values.

// CompletionHandler suggests values for a prompt argument or resource template variable.
type CompletionHandler func(ctx context.Context, p *CompleteParams) (*Completion, error)

// handleComplete answers completion/complete: the handler of the referenced prompt or
// template, then the server's, and an empty completion when neither offers one.
func (s *Server) handleComplete(ctx context.Context, _ *requestState, params json.RawMessage) (any, error) {
	var p CompleteParams
	if err := unmarshalParams(params, &p); err != nil {
		return nil, err
	}
	complete, own, err := s.completerFor(&p)
	if err != nil {
		return nil, err
	}
	c, err := s.complete(ctx, &p, complete, own)
	if err != nil {
		return nil, err
	}
	if c, err = checkCompletion(c); err != nil {
		return nil, err
	}
	return map[string]any{"completion": c}, nil
}

// complete runs the handler completerFor chose and, when it was a prompt's or template's own
// that offered nothing, the server's.
func (s *Server) complete(ctx context.Context, p *CompleteParams, complete CompletionHandler, own bool) (*Completion, error) {
	c, err := complete(ctx, p)
	if err != nil || c != nil || !own || s.cfg.completion == nil {
		return c, err
	}
	return s.cfg.completion(ctx, p)
}

// completerFor decides which handler completes p: the referenced prompt's or template's own
// (own is true), else the server's, else one completing nothing when some prompt or template
// offers completions. It refuses a server without completions, and a ref of another type.
func (s *Server) completerFor(p *CompleteParams) (complete CompletionHandler, own bool, err error) {
	complete, own = s.completeRef(p), true
	if complete == nil {
		complete, own = s.cfg.completion, false
	}
	if complete == nil {
		if !s.hasCompleters() {
			return nil, false, NewError(CodeMethodNotFound, "this server does not offer completions")
		}
		// The server offers completions, not for this prompt or template: none.
		complete = func(context.Context, *CompleteParams) (*Completion, error) { return nil, nil }
	}
	switch p.Ref.Type {
	case "ref/prompt", "ref/resource":
		return complete, own, nil
	default:
		return nil, false, Errorf(CodeInvalidParams, "ref.type must be ref/prompt or ref/resource, got %q", truncate(p.Ref.Type, 40))
	}
}

// checkCompletion makes a handler's completion one to send: an empty one for none, values
// never null, and at most 100 of them (spec 2025-11-25, Completion: "Maximum 100 items per response").
func checkCompletion(c *Completion) (*Completion, error) {
	if c == nil {
		c = &Completion{}
	}
	if c.Values == nil {
		c.Values = []string{}
	}
	if len(c.Values) > 100 {
		return nil, fmt.Errorf("completion handler returned %d values; the maximum is 100", len(c.Values))
	}
	return c, nil
}

// enumCompleter returns a CompletionHandler that asks custom first, then completes the enum
// fields of md that are arguments (by JSON name) from their value names: the values that
// start with what was typed, case-insensitively, or also contain it when none does.
func enumCompleter(md protoreflect.MessageDescriptor, isArg func(string) bool, custom CompletionHandler) CompletionHandler {
	values := enumArguments(md, isArg)
	if len(values) == 0 && custom == nil {
		return nil
	}
	return (&enumCompletion{values: values, custom: custom}).complete
}

// enumCompletion is what enumCompleter's handler completes from: the enum arguments' value
// names, after the registration's own handler.
type enumCompletion struct {
	values map[string][]string
	custom CompletionHandler
}

// complete asks the custom handler first, then completes an enum argument from its value
// names; it offers nothing for another argument, which the server's WithCompletionHandler
// may complete.
func (e *enumCompletion) complete(ctx context.Context, p *CompleteParams) (*Completion, error) {
	if e.custom != nil {
		c, err := e.custom(ctx, p)
		if err != nil || c != nil {
			return c, err
		}
	}
	vals, ok := e.values[p.Argument.Name]
	if !ok {
		return nil, nil
	}
	return completeFrom(vals, p.Argument.Value), nil
}

// enumArguments returns the value names of each singular enum field of md that is an
// argument, by its JSON name and its proto name.
func enumArguments(md protoreflect.MessageDescriptor, isArg func(string) bool) map[string][]string {
	values := map[string][]string{}
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if fd.Enum() == nil || fd.IsList() || fd.IsMap() || !isArg(fd.JSONName()) {
			continue
		}
		names := enumValueNames(fd.Enum())
		values[fd.JSONName()] = names
		values[string(fd.Name())] = names
	}
	return values
}

// enumValueNames returns the names of ed's values but its zero *_UNSPECIFIED one, which no
// one means to choose.
func enumValueNames(ed protoreflect.EnumDescriptor) []string {
	vals := ed.Values()
	var names []string
	for j := range vals.Len() {
		v := vals.Get(j)
		if v.Number() == 0 && strings.HasSuffix(string(v.Name()), "_UNSPECIFIED") {
			continue
		}
		names = append(names, string(v.Name()))
	}
	return names
}

// completeFrom picks the candidates that match value, at most 100.
func completeFrom(candidates []string, value string) *Completion {
	v := strings.ToLower(value)
	out := matching(candidates, v, strings.HasPrefix)
	if len(out) == 0 {
		out = matching(candidates, v, strings.Contains)
	}
	c := &Completion{Values: out}
	if len(out) > 100 {
		n := len(out)
		c.Values, c.Total, c.HasMore = out[:100], &n, true
	}
	if c.Values == nil {
		c.Values = []string{}
	}
	return c
}

// matching returns the candidates that match the lower-case v, case-insensitively.
func matching(candidates []string, v string, match func(s, v string) bool) []string {
	var out []string
	for _, c := range candidates {
		if match(strings.ToLower(c), v) {
			out = append(out, c)
		}
	}
	return out
}

// completeRef finds the completion handler registered with the prompt or resource template
// that p refers to, if any.
func (s *Server) completeRef(p *CompleteParams) CompletionHandler {
	switch p.Ref.Type {
	case "ref/prompt":
		if e, ok := s.prompts.get(p.Ref.Name); ok {
			return e.complete
		}
	case "ref/resource":
		if e, ok := s.templates.get(p.Ref.URI); ok {
			return e.complete
		}
	}
	return nil
}

// hasCompleters reports whether a prompt or template brings its own completions, for the
// completions capability.
func (s *Server) hasCompleters() bool {
	for _, e := range s.prompts.all() {
		if e.complete != nil {
			return true
		}
	}
	for _, e := range s.templates.all() {
		if e.complete != nil {
			return true
		}
	}
	return false
}
