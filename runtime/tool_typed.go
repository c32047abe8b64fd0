package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	"github.com/protomcp/protomcp/internal/fieldrules"
	"github.com/protomcp/protomcp/internal/protojsonfast"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// This file is the typed adapter of tools, what generated code calls: AddTypedTool registers a
// handler of proto messages, decoding arguments with protojson, checking required fields and
// validation rules, and answering with the response message.

// AddTypedTool adds a typed tool: arguments are decoded with protojson into a new Req (unknown
// fields and wrong types are reported to the model as a tool error naming the field), and the
// response is sent as structuredContent plus a text mirror of the same JSON. A response of type
// *mcpv1.ToolResult is sent as its content blocks instead. Interceptors see the decoded Req as
// Request.Message and the handler's response as Response.Message. Generated Register functions
// call this once per tool.
func AddTypedTool[Req any, Res proto.Message, PReq interface {
	*Req
	proto.Message
}](s *Server, spec ToolSpec, h func(context.Context, PReq) (Res, error), opts ...HandlerOption) {
	if h == nil {
		panic(fmt.Sprintf("mcp: nil handler for tool %q", spec.Name))
	}
	name := spec.Name
	e := &toolEntry{enc: new(resultEncoding), decode: typedDecoder[Req, PReq](spec)}
	e.call = func(ctx context.Context, req *Request) (*Response, error) {
		in, ok := req.Message.(PReq)
		if !ok {
			return nil, Errorf(CodeInternalError, "tool %s: the request is a %T where the tool takes a %T (an interceptor replaced it)", name, req.Message, in)
		}
		out, err := h(ctx, in)
		if err != nil {
			return nil, err
		}
		resp := req.response()
		resp.Message = out
		return resp, nil
	}
	s.addTool(spec, e, opts)
}

// typedDecoder returns the decode function of a typed tool (see AddTypedTool): protojson into a
// new Req, the strict and required-field checks, then spec.Validate.
func typedDecoder[Req any, PReq interface {
	*Req
	proto.Message
}](spec ToolSpec) func(args json.RawMessage) (proto.Message, error) {
	md := PReq(new(Req)).ProtoReflect().Descriptor()
	d := &argsDecoder{
		name:     spec.Name,
		md:       md,
		required: requiredFields(spec.InputSchema, md),
		fast:     protojsonfast.NewDecoder(md),
		plan:     planFor(md),
		validate: spec.Validate,
	}
	return func(args json.RawMessage) (proto.Message, error) {
		in := PReq(new(Req))
		if err := d.decode(args, in); err != nil {
			return nil, err
		}
		return in, nil
	}
}

// argsDecoder decodes and checks the arguments of one typed tool: the work of typedDecoder's
// function, apart from the request type it makes.
type argsDecoder struct {
	name     string
	md       protoreflect.MessageDescriptor
	required []requiredField
	fast     *protojsonfast.Decoder // nil for a message it does not read
	plan     *requiredPlan
	validate func(proto.Message) error
}

// decode decodes args (nil or null: no arguments) into in, a new request, and checks them.
func (d *argsDecoder) decode(args json.RawMessage, in proto.Message) error {
	if len(args) > 0 && string(args) != "null" {
		if err := d.unmarshal(args, in); err != nil {
			return err
		}
	}
	return d.check(args, in)
}

// unmarshal decodes args into in with the fast decoder when they have the common form it
// reads (its integers pass the strict checks); otherwise protojson, from scratch, says what the
// arguments hold, and checkArgs refuses what protojson takes but the schema does not.
func (d *argsDecoder) unmarshal(args json.RawMessage, in proto.Message) error {
	if d.fast != nil {
		if d.fast.Unmarshal(args, in) {
			return nil
		}
		proto.Reset(in)
	}
	if err := argsUnmarshal.Unmarshal(args, in); err != nil {
		return fmt.Errorf("invalid arguments for tool %s: %s", d.name, argsError(in.ProtoReflect(), args, err))
	}
	if msg := checkArgs(args, d.md); msg != "" { // strict.go
		return fmt.Errorf("invalid arguments for tool %s: %s", d.name, msg)
	}
	return nil
}

// check applies what decoding does not: the fields the schema requires (the hand-written
// schema's, then the required-field contract's) and the tool's own validation.
func (d *argsDecoder) check(args json.RawMessage, in proto.Message) error {
	if missing := missingFields(args, d.required); len(missing) > 0 {
		return fmt.Errorf("invalid arguments for tool %s: missing required field %s", d.name, strings.Join(missing, ", "))
	}
	if problems := checkRequiredPlan(d.plan, d.md, args); len(problems) > 0 {
		return fmt.Errorf("invalid arguments for tool %s: %s", d.name, strings.Join(problems, "; "))
	}
	if err := validateArgs(d.validate, in); err != nil {
		return fmt.Errorf("invalid arguments for tool %s: %w", d.name, err)
	}
	return nil
}

// requiredField is a top-level field the input schema requires, under both names protojson
// accepts for it.
type requiredField struct {
	jsonName, protoName string
}

// requiredFields reads the input schema's top-level "required" list, for the fields that a
// hand-written schema requires beyond the required-field contract (see required.go).
func requiredFields(schema string, md protoreflect.MessageDescriptor) []requiredField {
	var s struct {
		Required []string `json:"required"`
	}
	if json.Unmarshal([]byte(schema), &s) != nil {
		return nil
	}
	out := make([]requiredField, 0, len(s.Required))
	for _, n := range s.Required {
		f := requiredField{jsonName: n, protoName: n}
		if fd := md.Fields().ByJSONName(n); fd != nil {
			if fieldrules.Required(fd) {
				continue // checked with the nested fields, by checkRequiredPlan
			}
			f.protoName = string(fd.Name())
		}
		out = append(out, f)
	}
	return out
}

// missingFields lists the required fields absent (or null) in the arguments object.
func missingFields(args json.RawMessage, required []requiredField) []string {
	if len(required) == 0 {
		return nil
	}
	var present map[string]json.RawMessage
	if len(args) > 0 {
		_ = json.Unmarshal(args, &present)
	}
	var missing []string
	for _, f := range required {
		if !f.presentIn(present) {
			missing = append(missing, strconv.Quote(f.jsonName))
		}
	}
	return missing
}

// presentIn reports whether the arguments' members hold f, under either name, and not null.
func (f requiredField) presentIn(members map[string]json.RawMessage) bool {
	v, ok := members[f.jsonName]
	if !ok {
		v, ok = members[f.protoName]
	}
	return ok && string(v) != "null"
}

var (
	argsUnmarshal   = protojson.UnmarshalOptions{}
	resultMarshal   = protojson.MarshalOptions{}
	resultUnmarshal = protojson.UnmarshalOptions{DiscardUnknown: true}
)

// cleanProtoError strips protojson's "proto: (line 1:2): " prefix, keeping what names the field.
func cleanProtoError(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "proto:")
	msg = strings.TrimSpace(msg)
	if strings.HasPrefix(msg, "(line ") {
		if i := strings.Index(msg, "): "); i >= 0 {
			msg = msg[i+3:]
		}
	}
	return strings.ReplaceAll(msg, "\u00a0", " ")
}

// messageResult turns a handler's response message into a CallToolResult that is already
// encoded: protojson writes structuredContent straight into the result's buffer and the text
// mirror is escaped from those bytes, so that a typed result costs one buffer (sized from the
// tool's previous result) instead of protojson's buffer, a string copy and a reflective
// encoding/json pass that re-validates the structured JSON and escapes the text again.
func messageResult(out proto.Message, enc *resultEncoding) (*CallToolResult, error) {
	if tr, ok := out.(*mcpv1.ToolResult); ok {
		return fromProtoToolResult(tr)
	}
	var er encodedResult
	end, err := encodeMessageResult(&er, out, enc)
	if err != nil {
		return nil, err
	}
	start := er.off + len(`{"structuredContent":`)
	return &CallToolResult{StructuredContent: er.buf[start:end:end], wire: er.buf, wireOff: er.off, wireBuf: er.pooled}, nil
}

// encodeMessageResult writes the tools/call result of a typed tool's message (not a
// *mcpv1.ToolResult) into er, as messageResult does, without a CallToolResult around it. end
// is where structuredContent ends in er.buf.
func encodeMessageResult(er *encodedResult, out proto.Message, enc *resultEncoding) (end int, err error) {
	if out == nil || !out.ProtoReflect().IsValid() {
		out = out.ProtoReflect().Type().New().Interface()
	}
	buf := enc.get()
	wire := buf.b[:resultHeadroom]
	wire = append(wire, `{"structuredContent":`...)
	start := len(wire)
	wire, err = protojsonfast.AppendFast(wire, out, enc.fast(out.ProtoReflect().Descriptor()))
	if err != nil {
		return 0, Errorf(CodeInternalError, "could not encode tool result: %v", err)
	}
	end = len(wire)
	wire = append(wire, `,"content":[{"type":"text","text":`...)
	wire = protojsonfast.AppendString(wire, wire[start:end])
	wire = append(wire, "}]}"...)
	enc.sizeHint.Store(int64(len(wire) + 1)) // + the envelope's closing brace
	buf.b = wire
	*er = encodedResult{buf: wire, off: resultHeadroom, pooled: buf}
	return end, nil
}
