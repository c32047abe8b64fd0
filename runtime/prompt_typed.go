package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	"github.com/protomcp/protomcp/internal/protojsonfast"
)

// PromptSpec declares one typed prompt as generated code describes it.
type PromptSpec struct {
	// Name is the prompt's name, unique within a server.
	Name string
	// Title is a human-readable title (optional).
	Title string
	// Description tells a user or model what the prompt is for.
	Description string
	// Arguments are the request message's fields, by JSON name, as prompts/list lists them.
	Arguments []PromptArgument
	// Complete, when set, answers completion/complete for this prompt's arguments. Without
	// it (or when it returns nil), an enum argument completes from its values.
	Complete CompletionHandler
	// Validate, when set, checks the decoded request before the handler sees it.
	Validate func(proto.Message) error
	// Meta is the prompt's _meta, listed as is (spec 2025-11-25, basic "_meta"). Generated code
	// sets RPCMetaKey to the rpc behind it. Nil for none.
	Meta map[string]any
}

// AddTypedPrompt adds a typed prompt: the arguments of prompts/get (strings on the wire) are
// decoded into a new Req, field by field by JSON or proto name (an enum argument takes the
// value's name, a bool "true" or "false", a number its decimal text), and the handler's
// *mcpv1.PromptResult is sent as the GetPromptResult. An unknown or malformed argument is an
// invalid-params error naming it. Interceptors given in opts wrap this prompt's prompts/get
// requests, as for Server.AddPrompt. Generated Register functions call this once per prompt.
func AddTypedPrompt[Req any, PReq interface {
	*Req
	proto.Message
}](s *Server, spec PromptSpec, h func(context.Context, PReq) (*mcpv1.PromptResult, error), opts ...HandlerOption) {
	if h == nil {
		panic(fmt.Sprintf("mcp: nil handler for prompt %q", spec.Name))
	}
	md := PReq(new(Req)).ProtoReflect().Descriptor()
	p := Prompt{Name: spec.Name, Title: spec.Title, Description: spec.Description, Arguments: spec.Arguments, Meta: spec.Meta}
	complete := enumCompleter(md, func(name string) bool {
		return slices.ContainsFunc(spec.Arguments, func(a PromptArgument) bool { return a.Name == name })
	}, spec.Complete)
	s.addPrompt(p, func(ctx context.Context, args map[string]string) (*GetPromptResult, error) {
		in := PReq(new(Req))
		if err := stringsToMessage(args, in); err != nil {
			return nil, Errorf(CodeInvalidParams, "invalid arguments for prompt %s: %v", spec.Name, err)
		}
		if err := validateArgs(spec.Validate, in); err != nil {
			return nil, Errorf(CodeInvalidParams, "invalid arguments for prompt %s: %v", spec.Name, err)
		}
		out, err := h(ctx, in)
		if err != nil {
			return nil, err
		}
		return PromptResultFromProto(out)
	}, complete, opts)
}

// GetTypedPrompt renders a prompt with a protobuf request as its arguments: each set field becomes
// one string argument, by JSON name (enums by value name, numbers and bools as their JSON
// text). Generated clients call it once per prompt; opts apply as to a tool call (WithTimeout,
// WithMeta, WithProgress).
func GetTypedPrompt(ctx context.Context, c *Client, name string, req proto.Message, opts ...CallOption) (*mcpv1.PromptResult, error) {
	args, err := messageToStrings(req)
	if err == nil {
		err = checkPromptArgs(name, req, args)
	}
	if err != nil {
		return nil, fmt.Errorf("mcp prompts/get %s: encode arguments: %w", name, err)
	}
	raw, err := c.Call(ctx, methodPromptsGet, map[string]any{"name": name, "arguments": args}, opts...)
	if err != nil {
		return nil, err
	}
	var res GetPromptResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("mcp prompts/get %s: decode result: %w", name, err)
	}
	return PromptResultToProto(&res)
}

// PromptResultFromProto converts an *mcpv1.PromptResult into the wire result.
func PromptResultFromProto(pr *mcpv1.PromptResult) (*GetPromptResult, error) {
	res := &GetPromptResult{Description: pr.GetDescription(), Messages: make([]PromptMessage, 0, len(pr.GetMessages()))}
	for i, m := range pr.GetMessages() {
		c, err := ContentFromProto(m.GetContent())
		if err != nil {
			return nil, Errorf(CodeInternalError, "prompt message %d: %v", i, err)
		}
		role := "user"
		if m.GetRole() == mcpv1.Role_ROLE_ASSISTANT {
			role = "assistant"
		}
		res.Messages = append(res.Messages, PromptMessage{Role: role, Content: c})
	}
	return res, nil
}

// PromptResultToProto converts a wire prompt result into an *mcpv1.PromptResult.
func PromptResultToProto(r *GetPromptResult) (*mcpv1.PromptResult, error) {
	out := &mcpv1.PromptResult{Description: r.Description}
	for i, m := range r.Messages {
		c, err := ContentToProto(m.Content)
		if err != nil {
			return nil, fmt.Errorf("prompt message %d: %w", i, err)
		}
		role := mcpv1.Role_ROLE_USER
		if m.Role == "assistant" {
			role = mcpv1.Role_ROLE_ASSISTANT
		}
		out.Messages = append(out.Messages, &mcpv1.PromptMessage{Role: role, Content: c})
	}
	return out, nil
}

// stringsToMessage sets msg's top-level fields from string values keyed by JSON or proto
// name, through protojson so that every scalar kind and enum is parsed as protojson does.
func stringsToMessage(args map[string]string, msg proto.Message) error {
	if len(args) == 0 {
		return nil
	}
	md := msg.ProtoReflect().Descriptor()
	buf := []byte{'{'}
	for _, k := range sortedKeys(args) {
		if len(buf) > 1 {
			buf = append(buf, ',')
		}
		var err error
		if buf, err = appendStringArg(buf, md, k, args[k]); err != nil {
			return err
		}
	}
	buf = append(buf, '}')
	if err := argsUnmarshal.Unmarshal(buf, msg); err != nil {
		return errors.New(argsError(msg.ProtoReflect(), buf, err))
	}
	return nil
}

// appendStringArg appends the member for argument k of value v to buf, the JSON object
// stringsToMessage builds for md: a string, which protojson parses as the field's kind, or a
// boolean. Only singular scalar and enum fields take a string argument.
func appendStringArg(buf []byte, md protoreflect.MessageDescriptor, k, v string) ([]byte, error) {
	fd := stringArgField(md, k)
	if fd == nil {
		return nil, fmt.Errorf("unknown argument %q", k)
	}
	buf = protojsonfast.AppendString(buf, fd.JSONName())
	buf = append(buf, ':')
	if fd.Kind() != protoreflect.BoolKind {
		return protojsonfast.AppendString(buf, v), nil
	}
	if v != "true" && v != "false" {
		return nil, fmt.Errorf("argument %q: want true or false, got %q", k, truncate(v, 40))
	}
	return append(buf, v...), nil
}

// stringArgField is the field of md that argument k sets, or nil when there is none that a
// string sets: only singular scalar and enum fields take one.
func stringArgField(md protoreflect.MessageDescriptor, k string) protoreflect.FieldDescriptor {
	fd := fieldByKey(md, k)
	if fd == nil || fd.IsList() || fd.IsMap() || fd.Message() != nil {
		return nil
	}
	return fd
}

// fieldByKey finds the field a JSON member names, by JSON name, else by proto name, as
// protojson does.
func fieldByKey(md protoreflect.MessageDescriptor, k string) protoreflect.FieldDescriptor {
	if fd := md.Fields().ByJSONName(k); fd != nil {
		return fd
	}
	return md.Fields().ByName(protoreflect.Name(k))
}

// checkPromptArgs refuses, before they are sent, the string arguments args that the typed
// client made from req for prompt name, when the server would refuse them: it decodes them as
// AddTypedPrompt's handler does, into a new message of req's type. An open enum's number that
// has no name is one (it becomes its decimal text, and an enum argument takes a value's name).
// The error is the server's, word for word.
func checkPromptArgs(name string, req proto.Message, args map[string]string) error {
	if err := stringsToMessage(args, req.ProtoReflect().New().Interface()); err != nil {
		return Errorf(CodeInvalidParams, "invalid arguments for prompt %s: %v", name, err)
	}
	return nil
}

// messageToStrings is stringsToMessage's inverse: the set fields of msg as strings keyed by
// JSON name.
func messageToStrings(msg proto.Message) (map[string]string, error) {
	b, err := argsMarshal.Marshal(msg)
	if err != nil {
		return nil, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(obj))
	for k, v := range obj {
		s, ok := scalarText(v)
		if !ok {
			return nil, fmt.Errorf("field %q is not a scalar", k)
		}
		out[k] = s
	}
	return out, nil
}

// scalarText is a JSON scalar as a string argument: a string's text, or a number's or a
// boolean's JSON; ok is false for an object or an array.
func scalarText(v json.RawMessage) (text string, ok bool) {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s, true
	}
	if len(v) > 0 && (v[0] == '{' || v[0] == '[') {
		return "", false
	}
	return string(v), true
}

// UnimplementedPrompt returns the error of a generated Unimplemented...Handler's prompt
// method (which Register functions do not register).
func UnimplementedPrompt(name string) error {
	return Errorf(CodeMethodNotFound, "prompt %q is not implemented by this server", name)
}
