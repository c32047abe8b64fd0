// Package contract tests, end to end over loopback HTTP, that the JSON Schemas protoc-gen-mcp
// writes, what the typed client sends and what the server accepts are one contract: every
// request the typed client encodes validates against the tool's input schema, every result the
// server writes validates against its output schema, and the server refuses what the schemas
// refuse, naming the field.
package contract

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	contractv1 "github.com/protomcp/protomcp/gen/contract/v1"
	"github.com/protomcp/protomcp/gen/contract/v1/contractv1mcp"
	"github.com/protomcp/protomcp/runtime"
)

// echo returns what it is sent.
type echo struct {
	contractv1mcp.UnimplementedContractServiceHandler
}

func (echo) Echo(_ context.Context, req *contractv1.EchoRequest) (*contractv1.EchoResponse, error) {
	return &contractv1.EchoResponse{Request: req, Color: req.GetColor()}, nil
}

func (echo) Known(_ context.Context, req *contractv1.KnownRequest) (*contractv1.KnownResponse, error) {
	return &contractv1.KnownResponse{Request: req}, nil
}

// fixture is a contract server on loopback HTTP, a client of it, the tools' compiled schemas
// and the arguments of every tools/call the server received.
type fixture struct {
	client  *runtime.Client
	typed   contractv1mcp.ContractServiceClient
	inputs  map[string]*jsonschema.Schema
	outputs map[string]*jsonschema.Schema

	mu   sync.Mutex
	args []json.RawMessage // arguments of each tools/call, in order
}

func newFixture(t *testing.T, h contractv1mcp.ContractServiceHandler, register ...func(*runtime.Server)) *fixture {
	t.Helper()
	srv := runtime.NewServer(runtime.Implementation{Name: "contract", Version: "1.0.0"})
	contractv1mcp.RegisterContractServiceHandler(srv, h)
	for _, r := range register {
		r(srv)
	}
	f := &fixture{inputs: map[string]*jsonschema.Schema{}, outputs: map[string]*jsonschema.Schema{}}
	// Record the arguments as they arrive on the wire, before the runtime decodes them.
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(r.Body)
			assert.NoError(t, err, "read body")
			var m struct {
				Method string `json:"method"`
				Params struct {
					Arguments json.RawMessage `json:"arguments"`
				} `json:"params"`
			}
			if json.Unmarshal(body, &m) == nil && m.Method == "tools/call" {
				f.mu.Lock()
				f.args = append(f.args, m.Params.Arguments)
				f.mu.Unlock()
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	f.client = runtime.NewClient(hs.URL)
	t.Cleanup(func() { _ = f.client.Close(context.Background()) })
	f.typed = contractv1mcp.NewContractServiceClient(f.client)

	list, err := f.client.ListTools(context.Background(), "")
	require.NoError(t, err)
	for _, tool := range list.Tools {
		f.inputs[tool.Name] = compile(t, tool.InputSchema)
		if len(tool.OutputSchema) > 0 {
			f.outputs[tool.Name] = compile(t, tool.OutputSchema)
		}
	}
	return f
}

// compile compiles a schema as JSON Schema 2020-12 (MCP's default dialect), asserting formats
// and content encodings, as a strict client would.
func compile(t *testing.T, schema json.RawMessage) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.AssertContent()
	require.NoError(t, c.AddResource("mem:///schema.json", doc))
	s, err := c.Compile("mem:///schema.json")
	require.NoError(t, err, "schema does not compile:\n%s", schema)
	return s
}

func validate(s *jsonschema.Schema, doc []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return err
	}
	return s.Validate(inst)
}

// lastArgs is the arguments object of the last tools/call.
func (f *fixture) lastArgs(t *testing.T) json.RawMessage {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	require.NotEmpty(t, f.args, "no tools/call was received")
	return f.args[len(f.args)-1]
}

// checkCall validates the last request's arguments against tool's input schema, and the
// result's structuredContent against its output schema.
func (f *fixture) checkCall(t *testing.T, tool string, res *runtime.CallToolResult) {
	t.Helper()
	args := f.lastArgs(t)
	assert.NoErrorf(t, validate(f.inputs[tool], args), "%s: the typed client sent arguments its input schema refuses: %s\n", tool, args)
	if res != nil && f.outputs[tool] != nil {
		assert.NoErrorf(t, validate(f.outputs[tool], res.StructuredContent), "%s: the server wrote a result its output schema refuses: %s\n", tool, res.StructuredContent)
	}
}

// minimal is the smallest valid EchoRequest: every required field at its zero value, but for
// the placeholder color and the list that must not be empty.
func minimal() *contractv1.EchoRequest {
	return &contractv1.EchoRequest{Color: contractv1.Color_COLOR_RED, Tags: []string{""}}
}

// TestTypedClientSendsRequiredZeroValues: a required field whose value is the zero value goes
// on the wire, and the server takes it.
func TestTypedClientSendsRequiredZeroValues(t *testing.T) {
	t.Parallel()
	f := newFixture(t, echo{})
	ctx := context.Background()
	res, err := f.typed.Echo(ctx, minimal())
	require.NoError(t, err, "Echo with zero-valued required fields")
	var sent map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(f.lastArgs(t), &sent))
	for name, want := range map[string]string{"count": "0", "flag": "false", "name": `""`, "big": `"0"`, "mode": `"MODE_FIRST"`} {
		assert.Equal(t, want, string(sent[name]), "sent %s", name)
	}
	assert.Equal(t, contractv1.Color_COLOR_RED, res.GetRequest().GetColor(), "echoed color")
	// Nested: the required city of each address, in a field, a list and a map.
	nested := minimal()
	nested.Home = &contractv1.Address{}
	nested.Others = []*contractv1.Address{{City: "a"}, {}}
	nested.ByName = map[string]*contractv1.Address{"k": {}}
	nested.Tree = &contractv1.Tree{Children: []*contractv1.Tree{{}}}
	_, err = f.typed.Echo(ctx, nested)
	require.NoError(t, err, "Echo with zero-valued nested required fields")
	f.checkCall(t, "echo", nil)
}

// TestRequiredAtEveryDepth: the server refuses arguments without a required field at any
// depth, or with a required enum's placeholder, or an empty required list, naming the path.
func TestRequiredAtEveryDepth(t *testing.T) {
	t.Parallel()
	f := newFixture(t, echo{})
	ctx := context.Background()
	base := `"count": 1, "flag": true, "name": "n", "big": "1", "color": "COLOR_RED", "mode": "MODE_FIRST", "tags": ["t"]`
	cases := []struct {
		args string
		want []string // substrings of the tool error
	}{
		{`{"tags": ["t"]}`, []string{`missing required field "count", "flag", "name", "big", "color", "mode"`}},
		{`{` + base + `, "home": {}}`, []string{`missing required field "home.city"`}},
		{`{` + base + `, "home": {"street": "s"}, "others": [{"city": "c"}, {"city": null}]}`, []string{`"home.city"`, `"others[1].city"`}},
		{`{` + base + `, "byName": {"x": {"city": "c"}, "y": {}}}`, []string{`"byName[\"y\"].city"`}},
		{`{` + base + `, "tree": {"label": "r", "children": [{"children": [{}]}]}}`, []string{`"tree.children[0].label"`, `"tree.children[0].children[0].label"`}},
		{`{` + base + `, "postal": {}}`, []string{`"postal.city"`}},
		{strings.Replace(`{`+base+`}`, `"COLOR_RED"`, `"COLOR_UNSPECIFIED"`, 1), []string{`required field "color" must not be COLOR_UNSPECIFIED`}},
		// The placeholder's number is refused as every enum number is (the schema lists names).
		{strings.Replace(`{`+base+`}`, `"COLOR_RED"`, `0`, 1), []string{`field color: 0 is an enum number`}},
		{strings.Replace(`{`+base+`}`, `"COLOR_RED"`, `"COLOR_UNSPECIFIED"`, 1), []string{`required field "color" must not be COLOR_UNSPECIFIED`}},
		{strings.Replace(`{`+base+`}`, `["t"]`, `[]`, 1), []string{`required field "tags" must have at least one item`}},
	}
	for _, tc := range cases {
		res, err := f.client.CallTool(ctx, "echo", json.RawMessage(tc.args))
		require.NoError(t, err, tc.args)
		if !assert.True(t, res.IsError, "%s: accepted, want a tool error", tc.args) {
			continue
		}
		for _, want := range tc.want {
			assert.Contains(t, res.Text(), want, tc.args)
		}
		// The schema refuses the same arguments.
		assert.Error(t, validate(f.inputs["echo"], []byte(tc.args)), "%s: the input schema accepts what the server refuses", tc.args)
	}
	// The typed client's view: an unset required message field is left out, and the server
	// names it.
	req := minimal()
	req.Others = []*contractv1.Address{{City: "x"}, {Street: "no city"}}
	_, err := f.typed.Echo(ctx, req)
	require.NoError(t, err, "the typed client did not fill others[1].city")
	req = minimal()
	req.Color = contractv1.Color_COLOR_UNSPECIFIED
	_, err = f.typed.Echo(ctx, req)
	var te *runtime.ToolError
	if assert.True(t, asToolError(err, &te), "Echo with the placeholder color: %v, want a tool error", err) {
		assert.ErrorContains(t, te, `"color"`, "Echo with the placeholder color")
	}
}

func asToolError(err error, target **runtime.ToolError) bool {
	te, ok := err.(*runtime.ToolError)
	if ok {
		*target = te
	}
	return ok
}

// TestExtremeValues calls every tool through the typed client with extreme values and checks
// every request and result against the schemas.
func TestExtremeValues(t *testing.T) {
	t.Parallel()
	f := newFixture(t, echo{})
	ctx := context.Background()
	ratio := math.MaxFloat64
	req := &contractv1.EchoRequest{
		Count: math.MinInt32, Flag: true, Name: "<&>\u2028", Big: math.MinInt64,
		Color: contractv1.Color_COLOR_GREEN, Mode: contractv1.Mode_MODE_SECOND, Tags: []string{"a", "b"},
		Home:   &contractv1.Address{City: "c", Point: &contractv1.Point{Latitude: -90, Longitude: 180}},
		Others: []*contractv1.Address{{City: "x"}}, ByName: map[string]*contractv1.Address{"": {City: "y"}},
		Tree:  &contractv1.Tree{Label: "r", Children: []*contractv1.Tree{{Label: "c"}}},
		Ratio: &ratio, Weight: math.MaxFloat32, Total: math.MaxUint64, Blob: []byte{0, 255},
		ByCode: map[int32]string{math.MinInt32: "min", math.MaxInt32: "max"},
		Target: &contractv1.EchoRequest_Email{Email: "a@example.com"},
	}
	res, err := f.typed.Echo(ctx, req)
	require.NoError(t, err)
	if diff := cmp.Diff(req, res.GetRequest(), protocmp.Transform()); diff != "" {
		assert.Fail(t, fmt.Sprintf("the echoed request differs (-sent +echoed):\n%s", diff))
	}
	raw, err := f.client.CallTool(ctx, "echo", f.lastArgs(t))
	require.NoError(t, err)
	f.checkCall(t, "echo", raw)
}

// callRaw calls a tool with raw arguments, as a model's client would.
func (f *fixture) callRaw(t *testing.T, tool, args string) *runtime.CallToolResult {
	t.Helper()
	res, err := f.client.CallTool(context.Background(), tool, json.RawMessage(args))
	require.NoError(t, err, args)
	return res
}

// TestNullArguments: null is "not set" for every field that is not required, in the input
// schema and on the server alike.
func TestNullArguments(t *testing.T) {
	t.Parallel()
	f := newFixture(t, echo{})
	args := `{"count": 1, "flag": true, "name": "n", "big": "1", "color": "COLOR_RED", "mode": "MODE_FIRST", "tags": ["t"],
		"home": null, "others": null, "byName": null, "tree": null, "ratio": null, "weight": null, "total": null,
		"blob": null, "byCode": null, "email": null, "postal": null}`
	assert.NoError(t, validate(f.inputs["echo"], []byte(args)), "the input schema refuses null for fields that are not required")
	res := f.callRaw(t, "echo", args)
	assert.False(t, res.IsError, "the server refuses null for fields that are not required: %s", res.Text())
	known := `{"at": null, "wait": null, "mask": null, "data": null, "value": null, "maybe": null, "any": null, "times": null}`
	assert.NoError(t, validate(f.inputs["known"], []byte(known)), "the input schema of known refuses null")
	res = f.callRaw(t, "known", known)
	assert.False(t, res.IsError, "the server refuses null well-known types: %s", res.Text())
	assert.NoError(t, validate(f.outputs["known"], res.StructuredContent), "output %s", res.StructuredContent)
	assert.Falsef(t, strings.Contains(string(res.StructuredContent), "null") && !strings.Contains(string(res.StructuredContent), `"value":null`), "the server wrote null: %s", res.StructuredContent)
}

// TestOneofRule: the input schema states the oneof rule in its descriptions rather than with
// keywords, and the server enforces it, naming the field.
func TestOneofRule(t *testing.T) {
	t.Parallel()
	f := newFixture(t, echo{})
	args := `{"count": 1, "flag": true, "name": "n", "big": "1", "color": "COLOR_RED", "mode": "MODE_FIRST", "tags": ["t"],
		"email": "a@example.com", "postal": {"city": "c"}}`
	res := f.callRaw(t, "echo", args)
	assert.True(t, res.IsError, "two members of a oneof: want a tool error: %s", res.Text())
	assert.Contains(t, res.Text(), "postal", "two members of a oneof: the error names the field")
	var schema struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	}
	list, err := f.client.ListTools(context.Background(), "")
	require.NoError(t, err)
	for _, tool := range list.Tools {
		if tool.Name == "echo" {
			_ = json.Unmarshal(tool.InputSchema, &schema)
		}
	}
	assert.Contains(t, schema.Properties["email"].Description, "Set at most one of: email, postal.", "email's description does not state the oneof rule")
}

// unknownColor answers with enum numbers that have no name.
type unknownColor struct{ echo }

func (unknownColor) Echo(_ context.Context, req *contractv1.EchoRequest) (*contractv1.EchoResponse, error) {
	return &contractv1.EchoResponse{Request: req, Color: contractv1.Color(42)}, nil
}

// TestOutputAcceptsUnknownEnumNumbers: an open enum's unknown number, which protojson writes
// as a number, is valid against the output schema, and the typed client decodes it.
func TestOutputAcceptsUnknownEnumNumbers(t *testing.T) {
	t.Parallel()
	f := newFixture(t, unknownColor{})
	res, err := f.typed.Echo(context.Background(), minimal())
	require.NoError(t, err)
	assert.Equal(t, contractv1.Color(42), res.GetColor(), "color")
	raw := f.callRaw(t, "echo", string(f.lastArgs(t)))
	assert.Contains(t, string(raw.StructuredContent), `"color":42`, "structuredContent does not carry the number")
	f.checkCall(t, "echo", raw)
}

// TestTypedClientRefusesWhatTheServerRefuses: protojson writes an open enum's number that has
// no name as a number and an empty google.protobuf.Any as {}; the input schema refuses both
// (it lists the enum's names and requires "@type"), and so does the server. The typed client
// refuses them before sending, with the server's message word for word, so that a typed
// request the client sends is one the server takes.
func TestTypedClientRefusesWhatTheServerRefuses(t *testing.T) {
	t.Parallel()
	f := newFixture(t, echo{})
	ctx := context.Background()
	unknownColor, unknownMode := minimal(), minimal()
	unknownColor.Color = contractv1.Color(42)
	unknownMode.Mode = contractv1.Mode(7)
	cases := []struct {
		name string
		tool string
		call func() error
		req  proto.Message
		want string
	}{
		{"open enum's unknown number", "echo", func() error { _, err := f.typed.Echo(ctx, unknownColor); return err }, unknownColor,
			"invalid arguments for tool echo: field color: 42 is an enum number; give one of the value names the schema lists"},
		{"enum with a meaningful zero, unknown number", "echo", func() error { _, err := f.typed.Echo(ctx, unknownMode); return err }, unknownMode,
			"invalid arguments for tool echo: field mode: 7 is an enum number; give one of the value names the schema lists"},
		{"empty Any", "known", func() error { _, err := f.typed.Known(ctx, &contractv1.KnownRequest{Any: &anypb.Any{}}); return err }, &contractv1.KnownRequest{Any: &anypb.Any{}},
			`invalid arguments for tool known: field any: {} is an Any without "@type"; give the type URL of the packed message`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.mu.Lock()
			sent := len(f.args)
			f.mu.Unlock()
			err := tc.call()
			require.Error(t, err, "the typed client sent a request the server refuses")
			assert.Equal(t, runtime.CodeInvalidParams, runtime.CodeOf(err), "code of %v", err)
			assert.Contains(t, err.Error(), tc.want, "the client's refusal")
			f.mu.Lock()
			assert.Equal(t, sent, len(f.args), "the refused request reached the server")
			f.mu.Unlock()

			// What the client would have sent: the schema and the server refuse it, and the
			// server says so in the same words.
			args, err := protojson.Marshal(tc.req)
			require.NoError(t, err)
			assert.Error(t, validate(f.inputs[tc.tool], args), "the input schema accepts %s", args)
			res := f.callRaw(t, tc.tool, string(args))
			assert.True(t, res.IsError, "the server accepts %s", args)
			assert.Equal(t, tc.want, res.Text(), "the server's refusal of %s", args)
		})
	}

	// An Any that names its message goes through, and comes back as it was sent.
	packed, err := anypb.New(durationpb.New(90 * time.Second))
	require.NoError(t, err)
	res, err := f.typed.Known(ctx, &contractv1.KnownRequest{Any: packed})
	require.NoError(t, err, "a packed Any")
	if diff := cmp.Diff(packed, res.GetRequest().GetAny(), protocmp.Transform()); diff != "" {
		assert.Fail(t, fmt.Sprintf("the echoed Any differs (-sent +echoed):\n%s", diff))
	}
	f.checkCall(t, "known", nil)
}

func (echo) Validated(_ context.Context, req *contractv1.ValidatedRequest) (*contractv1.ValidatedResponse, error) {
	return &contractv1.ValidatedResponse{Request: req}, nil
}

// validRequest satisfies every rule of ValidatedRequest.
func validRequest() *contractv1.ValidatedRequest {
	return &contractv1.ValidatedRequest{
		Email: "ada@example.com", Name: "ada", Percent: 100, Ratio: 0.5, Tags: []string{"a", "b"},
		Labels: map[string]string{"ok": "v"}, Color: contractv1.Color_COLOR_RED, Low: 1, High: 2,
		Deadline: timestamppb.New(time.Now().Add(time.Hour)), Big: math.MaxInt64, Code: "a",
		Address: &contractv1.ValidatedAddress{City: "Paris"},
		Contact: &contractv1.ValidatedRequest_Site{Site: "https://example.com/"},
	}
}

// TestValidateRules: buf.validate rules are in the input schema where a keyword says them, and
// protovalidate enforces every one on the server before the handler, answering a tool error
// that lists each violation's field path (in JSON names) and message.
func TestValidateRules(t *testing.T) {
	t.Parallel()
	f := newFixture(t, echo{})
	ctx := context.Background()
	sent := validRequest()
	res, err := f.typed.Validated(ctx, sent)
	require.NoError(t, err, "a valid request was refused")
	if diff := cmp.Diff(sent, res.GetRequest(), protocmp.Transform()); diff != "" {
		assert.Fail(t, fmt.Sprintf("the echoed request differs (-sent +echoed):\n%s", diff))
	}
	raw := f.callRaw(t, "validated", string(f.lastArgs(t)))
	f.checkCall(t, "validated", raw)

	bad := &contractv1.ValidatedRequest{
		Email: "not an address", Name: "A", Percent: 101, Ratio: 0, Tags: []string{"a", "a", ""},
		Labels: map[string]string{"k": "v"}, Color: contractv1.Color_COLOR_GREEN, Low: 5, High: 1,
		Deadline: timestamppb.New(time.Now().Add(-time.Hour)), Big: -1, Code: "z",
		Address: &contractv1.ValidatedAddress{City: ""},
	}
	_, err = f.typed.Validated(ctx, bad)
	var te *runtime.ToolError
	require.True(t, asToolError(err, &te), "invalid request: %v, want a tool error", err)
	msg := te.Result.Text()
	for _, want := range []string{
		"invalid arguments for tool validated: ",
		"email: ", "name: ", "percent: must be greater than or equal to 0 and less than or equal to 100",
		"ratio: must be greater than 0", "tags: ", "tags[2]: ", `labels["k"]: `, "color: ",
		"deadline: ", "big: must be greater than 0", "code: ", "address.city: ", "phone or site: exactly one field is required",
		"low must be less than high",
	} {
		assert.Contains(t, msg, want, "tool error")
	}
	// What the schema can say, it refuses too.
	assert.Error(t, validate(f.inputs["validated"], f.lastArgs(t)), "the input schema accepts %s", f.lastArgs(t))
	for _, args := range []string{
		`{"code": "a", "site": "https://x.example", "email": "nope"}`,
		`{"code": "a", "site": "https://x.example", "name": "A"}`,
		`{"code": "a", "site": "https://x.example", "percent": 101}`,
		`{"code": "a", "site": "https://x.example", "ratio": 0}`,
		`{"code": "a", "site": "https://x.example", "tags": ["a", "a"]}`,
		`{"code": "a", "site": "https://x.example", "tags": ["a", "b", "c", "d"]}`,
		`{"code": "a", "site": "https://x.example", "labels": {}}`,
		`{"code": "a", "site": "https://x.example", "labels": {"k": "v"}}`,
		`{"code": "a", "site": "https://x.example", "color": "COLOR_GREEN"}`,
		`{"code": "z", "site": "https://x.example"}`,
		`{"site": "https://x.example"}`,
		`{"code": "a", "site": "https://x.example", "address": {"city": ""}}`,
	} {
		assert.Error(t, validate(f.inputs["validated"], []byte(args)), "the input schema accepts %s", args)
		assert.True(t, f.callRaw(t, "validated", args).IsError, "the server accepts %s", args)
	}
}

// TestErrorsNameTheField: arguments protojson refuses, among them values that the tightened
// patterns refuse too (64-bit integers and map keys past their range, timestamps, durations,
// field masks), come back as a tool error that names the field's path, and the input schema
// refuses them as well.
func TestErrorsNameTheField(t *testing.T) {
	t.Parallel()
	f := newFixture(t, echo{})
	base := `"count": 1, "flag": true, "name": "n", "big": "1", "color": "COLOR_RED", "mode": "MODE_FIRST", "tags": ["t"]`
	cases := []struct{ tool, args, want string }{
		{"known", `{"at": "yesterday"}`, `at: invalid google.protobuf.Timestamp value "yesterday"`},
		{"known", `{"at": "0000-01-01T00:00:00Z"}`, `at: `},
		{"known", `{"wait": "315576000001s"}`, `wait: `},
		{"known", `{"mask": "foo_bar"}`, `mask: `},
		{"known", `{"maybe": "9223372036854775808"}`, `maybe: `},
		{"known", `{"times": ["1970-01-01T00:00:00Z", "x"]}`, `times[1]: `},
		{"echo", `{` + strings.Replace(base, `"big": "1"`, `"big": "9223372036854775808"`, 1) + `}`, `big: `},
		{"echo", `{` + base + `, "total": "18446744073709551616"}`, `total: `},
		{"echo", `{` + base + `, "byCode": {"2147483648": "x"}}`, `byCode["2147483648"]: `},
		{"echo", `{` + base + `, "others": [{"city": "c"}, {"city": "c", "point": {"latitude": "north"}}]}`, `others[1].point.latitude: `},
		// A value of the wrong JSON kind says which kind the field takes.
		{"echo", `{` + strings.Replace(base, `"tags": ["t"]`, `"tags": "t"`, 1) + `}`, `tags: expected an array, got a string`},
		{"echo", `{` + strings.Replace(base, `"tags": ["t"]`, `"tags": ["t", 7]`, 1) + `}`, `tags[1]: expected a string, got a number`},
		{"echo", `{` + strings.Replace(base, `"name": "n"`, `"name": ["n"]`, 1) + `}`, `name: expected a string, got an array`},
		{"echo", `{` + strings.Replace(base, `"flag": true`, `"flag": "yes"`, 1) + `}`, `flag: expected a boolean, got a string`},
		{"echo", `{` + base + `, "others": ["c"]}`, `others[0]: expected an object, got a string`},
		{"echo", `{` + base + `, "byName": [{"city": "c"}]}`, `byName: expected an object, got an array`},
		{"echo", `{` + base + `, "byName": {"k": 1}}`, `byName["k"]: expected an object, got a number`},
		{"known", `{"at": 5}`, `at: expected a string, got a number`},
	}
	for _, tc := range cases {
		res := f.callRaw(t, tc.tool, tc.args)
		assert.True(t, res.IsError, "%s %s: want a tool error: %s", tc.tool, tc.args, res.Text())
		assert.Contains(t, res.Text(), "invalid arguments for tool "+tc.tool+": "+tc.want, "%s %s", tc.tool, tc.args)
		assert.Error(t, validate(f.inputs[tc.tool], []byte(tc.args)), "%s: the input schema accepts %s, which the server refuses", tc.tool, tc.args)
	}
}

func (echo) LegacyEcho(_ context.Context, req *contractv1.LegacyEchoRequest) (*contractv1.LegacyEchoResponse, error) {
	res := &contractv1.LegacyEchoResponse{Request: req, Etag: proto.String("e1"), Speed: req.Speed}
	proto.SetExtension(res, contractv1.E_Note, "a note")
	return res, nil
}

func (echo) EditionsEcho(_ context.Context, req *contractv1.EditionsEchoRequest) (*contractv1.EditionsEchoResponse, error) {
	return &contractv1.EditionsEchoResponse{Request: req}, nil
}

// legacyFixture is a fixture with the proto2 and editions services registered too.
func legacyFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixture(t, echo{}, func(srv *runtime.Server) {
		contractv1mcp.RegisterLegacyServiceHandler(srv, echo{})
		contractv1mcp.RegisterEditionsServiceHandler(srv, echo{})
	})
}

// TestProto2AndEditions: proto2 and editions messages make the round trip through the typed
// client with zero values and defaults; required fields are enforced at every depth; results
// with an extension, an OUTPUT_ONLY field and a closed enum number validate against the output
// schema; OUTPUT_ONLY fields are not in the input schema, and defaults are.
func TestProto2AndEditions(t *testing.T) {
	t.Parallel()
	f := legacyFixture(t)
	ctx := context.Background()
	legacy := contractv1mcp.NewLegacyServiceClient(f.client)
	res, err := legacy.LegacyEcho(ctx, &contractv1.LegacyEchoRequest{
		Id: proto.String(""), Tags: []string{"t"}, Inner: &contractv1.LegacyInner{N: proto.Int64(0)},
		Options: &contractv1.LegacyEchoRequest_Options{Verbose: proto.Bool(false)},
	})
	require.NoError(t, err, "LegacyEcho with zero values")
	assert.Equal(t, int32(5), res.GetRequest().GetCount(), "echoed count (the default)")
	assert.Equal(t, contractv1.Speed_SPEED_FAST, res.GetRequest().GetSpeed(), "echoed speed (the default)")
	assert.Zero(t, res.GetRequest().GetInner().GetN(), "echoed inner.n")
	assert.Equal(t, "a note", proto.GetExtension(res, contractv1.E_Note), "extension")
	assert.Equal(t, "e1", res.GetEtag(), "etag")
	raw := f.callRaw(t, "legacy_echo", string(f.lastArgs(t)))
	assert.Contains(t, string(raw.StructuredContent), `"[contract.v1.note]":"a note"`, "structuredContent has no extension key")
	f.checkCall(t, "legacy_echo", raw)
	// Arguments never carry enum numbers (the input schema lists names), but a handler may
	// answer with a closed enum's unknown number, which protojson writes as a number: the
	// output schema accepts it.
	raw = f.callRaw(t, "legacy_echo", `{"id": "x", "tags": ["t"], "speed": 9}`)
	assert.True(t, raw.IsError, "closed enum number in the arguments: %s", raw.Text())
	assert.Contains(t, raw.Text(), "speed: 9 is an enum number", "closed enum number in the arguments")
	fast := f.callRaw(t, "legacy_echo", `{"id": "x", "tags": ["t"], "speed": "SPEED_FAST"}`)
	numbered := strings.Replace(string(fast.StructuredContent), `"speed":"SPEED_FAST"`, `"speed":9`, 1)
	if numbered == string(fast.StructuredContent) {
		assert.Fail(t, fmt.Sprintf("no speed in %s", fast.StructuredContent))
	} else if err := validate(f.outputs["legacy_echo"], []byte(numbered)); err != nil {
		assert.Fail(t, fmt.Sprintf("output schema refuses %s: %v", numbered, err))
	}
	// Required at depth, and proto2 required with presence.
	raw = f.callRaw(t, "legacy_echo", `{"id": "x", "tags": ["t"], "inner": {}}`)
	// protojson checks proto2 required fields itself; the runtime adds the path.
	assert.True(t, raw.IsError, "missing inner.n: %s", raw.Text())
	assert.Contains(t, raw.Text(), `inner: required field contract.v1.LegacyInner.n not set`, "missing inner.n")
	var in struct {
		Properties map[string]struct {
			Default json.RawMessage `json:"default"`
		} `json:"properties"`
	}
	list, err := f.client.ListTools(ctx, "")
	require.NoError(t, err)
	for _, tool := range list.Tools {
		if tool.Name == "legacy_echo" {
			_ = json.Unmarshal(tool.InputSchema, &in)
			assert.Falsef(t, !strings.Contains(string(tool.OutputSchema), `"readOnly": true`) && !strings.Contains(string(tool.OutputSchema), `"readOnly":true`), "output schema marks no field readOnly: %s", tool.OutputSchema)
		}
	}
	assert.NotContains(t, in.Properties, "etag", "the OUTPUT_ONLY etag is in the input schema")
	for name, want := range map[string]string{"count": "5", "speed": `"SPEED_FAST"`, "limit": `"-7"`} {
		assert.Equal(t, want, string(in.Properties[name].Default), "default of %s", name)
	}

	editions := contractv1mcp.NewEditionsServiceClient(f.client)
	eres, err := editions.EditionsEcho(ctx, &contractv1.EditionsEchoRequest{Id: proto.String(""), Sub: &contractv1.EditionsSub{}})
	require.NoError(t, err, "EditionsEcho with zero values")
	assert.Equal(t, int32(7), eres.GetRequest().GetCount(), "count (the default)")
	var sent map[string]json.RawMessage
	_ = json.Unmarshal(f.lastArgs(t), &sent)
	assert.Equal(t, "0", string(sent["implicit"]), "the required implicit-presence field as sent")
	raw = f.callRaw(t, "editions_echo", string(f.lastArgs(t)))
	f.checkCall(t, "editions_echo", raw)
	raw = f.callRaw(t, "editions_echo", `{"id": "x"}`)
	assert.True(t, raw.IsError, "missing implicit: %s", raw.Text())
	assert.Contains(t, raw.Text(), `"implicit"`, "missing implicit")
}
