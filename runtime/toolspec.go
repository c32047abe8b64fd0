package runtime

import "google.golang.org/protobuf/proto"

// ToolSpec declares one tool as generated code (or a hand-written registration) describes it.
type ToolSpec struct {
	// Name is the tool's name, unique within a server; ^[A-Za-z0-9_-]{1,64}$.
	Name string
	// Title is a human-readable title (optional).
	Title string
	// Description tells a model what the tool does.
	Description string
	// InputSchema is the JSON Schema of the tool's arguments, as JSON text.
	InputSchema string
	// OutputSchema is the JSON Schema of the tool's structuredContent, as JSON text; empty when
	// the tool returns free-form content (an *mcpv1.ToolResult).
	OutputSchema string
	// Annotations are hints about the tool's behaviour (optional).
	Annotations *ToolAnnotations
	// Validate, when set, checks a typed tool's decoded arguments before interceptors and the
	// handler see them; an error becomes a tool error the model can read (see validate.go).
	// Generated code sets it to bufvalidate.Validate for requests with buf.validate rules.
	Validate func(proto.Message) error
	// Scopes are the OAuth scopes a caller's access token needs to call the tool over HTTP:
	// without them the Server answers 403 insufficient_scope before the handler runs. Empty
	// for none. From the proto option (mcp.v1.tool).scopes.
	Scopes []string
	// Meta is the tool's _meta, listed as is by tools/list (spec 2025-11-25, basic "_meta":
	// keys take a reverse-DNS prefix; ones whose second label is modelcontextprotocol or mcp
	// are reserved). Generated code sets RPCMetaKey to the rpc the tool calls. Nil for none.
	Meta map[string]any
	// TaskSupport says whether the tool may be called as a task (task.go); TaskForbidden, the
	// zero value, for an ordinary tool. From the proto option (mcp.v1.tool).task_support, or
	// an rpc that returns a google.longrunning.Operation.
	TaskSupport TaskSupport
	// RateLimits are the token buckets, one per caller, that the tool's calls take from
	// (ratelimit.go; WithRateLimit's options replace them and add more). From the proto
	// options (mcp.v1.tool).rate_limit and (mcp.v1.service).rate_limit. Nil for none.
	RateLimits []RateLimit
	// Cache is the tool's cache hint, which the tools/list pages it appears on take into
	// account (see CacheHint); nil takes the registration's (WithCacheHint), else the
	// server's (WithListCacheHint). From the proto options (mcp.v1.tool).cache_ttl_ms and
	// cache_scope, or those of its service.
	Cache *CacheHint
}

// RPCMetaKey is the _meta key whose value names the rpc behind a generated tool, prompt or
// resource, as a gRPC full method name without its leading slash ("pkg.Service/Method"), so a
// client finds the rpc without decoding proto options. Its prefix is the reverse DNS of the project's home,
// github.com/protomcp, per the _meta key rules of spec 2025-11-25, basic "_meta".
const RPCMetaKey = "com.github.protomcp/rpc"

// ToolAnnotations are the MCP tool annotations. A nil hint is left out and takes the spec's
// default.
type ToolAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// Bool returns a pointer to b, for the optional hints of ToolAnnotations.
func Bool(b bool) *bool { return &b }
