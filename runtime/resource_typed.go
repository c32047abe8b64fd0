package runtime

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
)

// ResourceSpec declares one typed resource template, or one fixed resource, as generated
// code describes it.
type ResourceSpec struct {
	// URITemplate is an RFC 6570 level-1 template ({var} segments) whose variables name the
	// request's fields; set it or URI.
	URITemplate string
	// URI is a fixed resource's URI (listed by resources/list); its request has no fields.
	URI string
	// Name is the resource's name.
	Name string
	// Title is a human-readable title (optional).
	Title string
	// Description says what the resource holds.
	Description string
	// MIMEType is the contents' MIME type; for a plain response message it defaults to
	// application/json.
	MIMEType string
	// Complete, when set, answers completion/complete for the template's variables. Without
	// it (or when it returns nil), an enum variable completes from its values.
	Complete CompletionHandler
	// Validate, when set, checks the decoded request before the handler sees it.
	Validate func(proto.Message) error
	// Meta is the resource (or template)'s _meta, listed as is (spec 2025-11-25, basic "_meta"). Generated code
	// sets RPCMetaKey to the rpc behind it. Nil for none.
	Meta map[string]any
}

// AddTypedResource adds a typed resource template (spec.URITemplate) or fixed resource
// (spec.URI). A resources/read of a URI that matches the template is decoded into a new Req:
// each variable, percent-decoded, sets the field of that proto or JSON name, as a prompt
// argument does. The handler's response is sent as it is when it is an *mcpv1.ResourceResult
// (a content without a URI gets the requested one); any other message is sent as one text
// content holding its protojson encoding, with spec.MIMEType (default application/json).
// Interceptors given in opts wrap the reads, as for Server.AddResourceTemplate. Generated
// Register functions call this once per resource rpc.
func AddTypedResource[Req any, Res proto.Message, PReq interface {
	*Req
	proto.Message
}](s *Server, spec ResourceSpec, h func(context.Context, PReq) (Res, error), opts ...HandlerOption) {
	if h == nil {
		panic(fmt.Sprintf("mcp: nil handler for resource %q", spec.Name))
	}
	mime := spec.MIMEType
	if mime == "" {
		mime = "application/json"
	}
	var tmpl *uriTemplate
	if spec.URITemplate != "" {
		tmpl = parseURITemplate(spec.URITemplate)
	}
	read := func(ctx context.Context, uri string) (*ReadResourceResult, error) {
		in := PReq(new(Req))
		if err := decodeResourceURI(spec, tmpl, uri, in); err != nil {
			return nil, err
		}
		out, err := h(ctx, in)
		if err != nil {
			return nil, err
		}
		return resourceResult(uri, mime, out)
	}
	if tmpl == nil {
		s.AddResource(Resource{URI: spec.URI, Name: spec.Name, Title: spec.Title, Description: spec.Description, MIMEType: spec.MIMEType, Meta: spec.Meta}, read, opts...)
		return
	}
	md := PReq(new(Req)).ProtoReflect().Descriptor()
	complete := enumCompleter(md, tmpl.namesField(md), spec.Complete)
	t := ResourceTemplate{URITemplate: spec.URITemplate, Name: spec.Name, Title: spec.Title, Description: spec.Description, MIMEType: spec.MIMEType, Meta: spec.Meta}
	s.addResourceTemplate(t, read, complete, opts)
}

// decodeResourceURI sets in, the request of the typed resource spec, from the variables of
// uri under tmpl (nil for a fixed resource), and validates it: a URI that tmpl does not match
// is not found, and one whose variables do not decode or validate has invalid params.
func decodeResourceURI(spec ResourceSpec, tmpl *uriTemplate, uri string, in proto.Message) error {
	if tmpl != nil {
		v, ok := tmpl.match(uri)
		if !ok {
			return Errorf(CodeResourceNotFound, "resource not found: %s", truncate(uri, 200))
		}
		if err := stringsToMessage(v, in); err != nil {
			return Errorf(CodeInvalidParams, "invalid URI for resource %s: %v", spec.Name, err)
		}
	}
	if err := validateArgs(spec.Validate, in); err != nil {
		return Errorf(CodeInvalidParams, "invalid URI for resource %s: %v", spec.Name, err)
	}
	return nil
}

// ReadTypedResource reads the resource that uriTemplate and req name (each {var} replaced by the
// field of that name, percent-encoded) and decodes it into a new Res: an *mcpv1.ResourceResult
// gets the contents as they are; any other message is decoded from the first text content
// with protojson. Generated clients call it once per resource rpc; for a fixed resource,
// uriTemplate is its URI and req nil. opts apply as to a tool call (WithTimeout, WithMeta).
func ReadTypedResource[Res any, PRes interface {
	*Res
	proto.Message
}](ctx context.Context, c *Client, uriTemplate string, req proto.Message, opts ...CallOption) (PRes, error) {
	uri, err := ExpandURITemplate(uriTemplate, req)
	if err != nil {
		return nil, fmt.Errorf("mcp resources/read %s: %w", uriTemplate, err)
	}
	raw, err := c.Call(ctx, methodResourcesRead, map[string]string{"uri": uri}, opts...)
	if err != nil {
		return nil, err
	}
	var res ReadResourceResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("mcp resources/read %s: decode result: %w", uri, err)
	}
	out := PRes(new(Res))
	if rr, ok := any(out).(*mcpv1.ResourceResult); ok {
		if err := contentsToProto(res.Contents, rr); err != nil {
			return nil, fmt.Errorf("mcp resources/read %s: %w", uri, err)
		}
		return out, nil
	}
	if err := decodeFirstText(res.Contents, out); err != nil {
		return nil, fmt.Errorf("mcp resources/read %s: %w", uri, err)
	}
	return out, nil
}

// contentsToProto appends contents, as the resource contents of mcpv1, to rr.
func contentsToProto(contents []ResourceContents, rr *mcpv1.ResourceResult) error {
	for i, rc := range contents {
		c, err := ContentToProto(Content{Type: "resource", Resource: &rc})
		if err != nil {
			return fmt.Errorf("contents[%d]: %w", i, err)
		}
		rr.Contents = append(rr.Contents, c.GetResource())
	}
	return nil
}

// decodeFirstText decodes the first text of contents into out with protojson: a typed
// resource's response message travels as one text content.
func decodeFirstText(contents []ResourceContents, out proto.Message) error {
	for _, rc := range contents {
		if rc.Text == nil {
			continue
		}
		if err := resultUnmarshal.Unmarshal([]byte(*rc.Text), out); err != nil {
			return fmt.Errorf("decode into %s: %w", out.ProtoReflect().Descriptor().FullName(), err)
		}
		return nil
	}
	return errors.New("no text contents to decode")
}

// ExpandURITemplate replaces each {var} of a level-1 URI template with the field of msg of
// that proto or JSON name, percent-encoded (everything but RFC 3986's unreserved characters).
// Every variable must be set: an empty one would make a URI that the template does not match.
func ExpandURITemplate(tmpl string, msg proto.Message) (string, error) {
	t := parseURITemplate(tmpl)
	if len(t.names) == 0 {
		return tmpl, nil
	}
	if msg == nil {
		return "", fmt.Errorf("the URI template has variables and the request is nil")
	}
	values, err := messageToStrings(msg)
	if err != nil {
		return "", err
	}
	md := msg.ProtoReflect().Descriptor()
	var b strings.Builder
	b.WriteString(t.lits[0])
	for n, name := range t.names {
		v, err := templateValue(md, values, name, tmpl)
		if err != nil {
			return "", err
		}
		b.WriteString(escapeURIValue(v))
		b.WriteString(t.lits[n+1])
	}
	return b.String(), nil
}

// templateValue is the value, among values (a message's fields as strings, by JSON name), of
// the field of md that name, a variable of the URI template tmpl, names; it must be set.
func templateValue(md protoreflect.MessageDescriptor, values map[string]string, name, tmpl string) (string, error) {
	fd := fieldByName(md, name)
	if fd == nil {
		return "", fmt.Errorf("the request %s has no field %q", md.FullName(), name)
	}
	v := values[fd.JSONName()]
	if v == "" {
		return "", fmt.Errorf("field %q is empty: it is a variable of the URI template %s", fd.JSONName(), tmpl)
	}
	return v, nil
}

// unreservedBytes marks RFC 3986's unreserved characters, which escapeURIValue leaves as they are.
var unreservedBytes = func() (t [256]bool) {
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~") {
		t[c] = true
	}
	return t
}()

// escapeURIValue percent-encodes all but unreserved characters, as RFC 6570 simple string
// expansion does.
func escapeURIValue(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreservedBytes[c] {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&0xf])
	}
	return b.String()
}

// fieldByName finds the field a URI template variable names, by proto name, else by JSON name.
func fieldByName(md protoreflect.MessageDescriptor, name string) protoreflect.FieldDescriptor {
	if fd := md.Fields().ByName(protoreflect.Name(name)); fd != nil {
		return fd
	}
	return md.Fields().ByJSONName(name)
}

// uriTemplate is a level-1 URI template taken apart: its literal text around its variables.
type uriTemplate struct {
	lits  []string // literal, literal, ..., one more than names
	names []string // the variables, in order
}

// parseURITemplate takes tmpl apart at its {var} segments; text after an unclosed brace is
// literal.
func parseURITemplate(tmpl string) *uriTemplate {
	t := &uriTemplate{}
	rest := tmpl
	for {
		i := strings.IndexByte(rest, '{')
		j := strings.IndexByte(rest, '}')
		if i < 0 || j < i {
			t.lits = append(t.lits, rest)
			return t
		}
		t.lits = append(t.lits, rest[:i])
		t.names = append(t.names, rest[i+1:j])
		rest = rest[j+1:]
	}
}

// namesField returns whether a JSON field name of md is the field of one of t's variables:
// the variables enumCompleter completes.
func (t *uriTemplate) namesField(md protoreflect.MessageDescriptor) func(jsonName string) bool {
	return func(jsonName string) bool {
		for _, n := range t.names {
			if fd := fieldByName(md, n); fd != nil && fd.JSONName() == jsonName {
				return true
			}
		}
		return false
	}
}

// match matches uri against t as templateMatcher does, and returns the variables' values,
// percent-decoded.
func (t *uriTemplate) match(uri string) (map[string]string, bool) {
	if !strings.HasPrefix(uri, t.lits[0]) {
		return nil, false
	}
	uri = uri[len(t.lits[0]):]
	vars := make(map[string]string, len(t.names))
	for n, lit := range t.lits[1:] {
		v, rest, ok := cutVariable(uri, lit)
		if !ok {
			return nil, false
		}
		vars[t.names[n]] = v
		uri = rest
	}
	return vars, uri == ""
}

// cutVariable takes a variable's value, percent-decoded, from the start of uri, up to lit, the
// literal after it (to the end when lit is empty), and returns what follows lit. A value is one
// or more characters other than '/'.
func cutVariable(uri, lit string) (v, rest string, ok bool) {
	k := len(uri)
	if lit != "" {
		k = strings.Index(uri, lit)
	}
	if k <= 0 || strings.IndexByte(uri[:k], '/') >= 0 {
		return "", "", false
	}
	v, err := url.PathUnescape(uri[:k])
	if err != nil {
		return "", "", false
	}
	return v, uri[k+len(lit):], true
}

// resourceResult turns a resource handler's response into the wire result.
func resourceResult(uri, mime string, out proto.Message) (*ReadResourceResult, error) {
	if rr, ok := out.(*mcpv1.ResourceResult); ok {
		return contentsFromProto(uri, rr), nil
	}
	if out == nil || !out.ProtoReflect().IsValid() {
		out = out.ProtoReflect().Type().New().Interface()
	}
	b, err := resultMarshal.Marshal(out)
	if err != nil {
		return nil, Errorf(CodeInternalError, "could not encode resource: %v", err)
	}
	return &ReadResourceResult{Contents: []ResourceContents{TextResource(uri, mime, string(b))}}, nil
}

// contentsFromProto is the wire result of rr, a resource handler's contents as they are; a
// content without a URI gets uri, the one read.
func contentsFromProto(uri string, rr *mcpv1.ResourceResult) *ReadResourceResult {
	res := &ReadResourceResult{Contents: make([]ResourceContents, 0, len(rr.GetContents()))}
	for _, er := range rr.GetContents() {
		rc := *resourceFromProto(er)
		rc.URI = cmp.Or(rc.URI, uri)
		res.Contents = append(res.Contents, rc)
	}
	return res
}

// UnimplementedResource returns the error of a generated Unimplemented...Handler's resource
// method (which Register functions do not register).
func UnimplementedResource(uri string) error {
	return Errorf(CodeMethodNotFound, "resource %q is not implemented by this server", uri)
}

// StaticText returns a ResourceHandler that reads text, with mimeType (default text/plain):
// generated Register functions serve the service's (mcp.v1.service).resources with it.
func StaticText(mimeType, text string) ResourceHandler {
	if mimeType == "" {
		mimeType = "text/plain"
	}
	return func(_ context.Context, uri string) (*ReadResourceResult, error) {
		return &ReadResourceResult{Contents: []ResourceContents{TextResource(uri, mimeType, text)}}, nil
	}
}
