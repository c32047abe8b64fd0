package runtime

import (
	"encoding/json"
	"strings"
)

// Protocol versions this runtime speaks, newest first.
const (
	ProtocolVersion20251125 = "2025-11-25"
	ProtocolVersion20250618 = "2025-06-18"
	ProtocolVersion20250326 = "2025-03-26"
	// LatestProtocolVersion is the version the client asks for and the server offers first.
	LatestProtocolVersion = ProtocolVersion20251125
)

var supportedVersions = []string{ProtocolVersion20251125, ProtocolVersion20250618, ProtocolVersion20250326}

func isSupportedVersion(v string) bool {
	for _, s := range supportedVersions {
		if s == v {
			return true
		}
	}
	return false
}

// Implementation names an MCP client or server.
type Implementation struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Version     string `json:"version"`
	Description string `json:"description,omitempty"`
	WebsiteURL  string `json:"websiteUrl,omitempty"`
}

// ClientCapabilities are what a client declares at initialization.
type ClientCapabilities struct {
	Roots        *RootsCapability       `json:"roots,omitempty"`
	Sampling     *SamplingCapability    `json:"sampling,omitempty"`
	Elicitation  *ElicitationCapability `json:"elicitation,omitempty"`
	Experimental map[string]any         `json:"experimental,omitempty"`
	// Extensions are the extensions the client declares, by identifier (spec 2026-07-28,
	// Extensions): io.modelcontextprotocol/tasks, say.
	Extensions map[string]json.RawMessage `json:"extensions,omitempty"`
}

// RootsCapability declares roots support.
type RootsCapability struct {
	ListChanged bool `json:"listChanged,omitempty"`
}

// SamplingCapability declares sampling support.
type SamplingCapability struct {
	Context *struct{} `json:"context,omitempty"`
	Tools   *struct{} `json:"tools,omitempty"`
}

// ElicitationCapability declares elicitation support; an empty value means form mode.
type ElicitationCapability struct {
	Form *struct{} `json:"form,omitempty"`
	URL  *struct{} `json:"url,omitempty"`
}

// ServerCapabilities are what a server declares at initialization.
type ServerCapabilities struct {
	Logging      *struct{}              `json:"logging,omitempty"`
	Completions  *struct{}              `json:"completions,omitempty"`
	Prompts      *ListChangedCapability `json:"prompts,omitempty"`
	Resources    *ResourcesCapability   `json:"resources,omitempty"`
	Tools        *ListChangedCapability `json:"tools,omitempty"`
	Experimental map[string]any         `json:"experimental,omitempty"`
	// Tasks is declared in 2025-11-25 when some tool may be called as a task (task_server.go).
	Tasks *ServerTasksCapability `json:"tasks,omitempty"`
	// Extensions are the extensions the server declares in 2026-07-28 (server/discover).
	Extensions map[string]any `json:"extensions,omitempty"`
}

// ListChangedCapability declares a feature and whether list_changed notifications are sent.
type ListChangedCapability struct {
	ListChanged bool `json:"listChanged,omitempty"`
}

// ResourcesCapability declares resources support.
type ResourcesCapability struct {
	Subscribe   bool `json:"subscribe,omitempty"`
	ListChanged bool `json:"listChanged,omitempty"`
}

// InitializeParams are the params of initialize.
type InitializeParams struct {
	ProtocolVersion string             `json:"protocolVersion"`
	Capabilities    ClientCapabilities `json:"capabilities"`
	ClientInfo      Implementation     `json:"clientInfo"`
}

// InitializeResult is the result of initialize.
type InitializeResult struct {
	ProtocolVersion string             `json:"protocolVersion"`
	Capabilities    ServerCapabilities `json:"capabilities"`
	ServerInfo      Implementation     `json:"serverInfo"`
	Instructions    string             `json:"instructions,omitempty"`
}

// Tool is a tool as tools/list describes it.
type Tool struct {
	Name         string           `json:"name"`
	Title        string           `json:"title,omitempty"`
	Description  string           `json:"description,omitempty"`
	InputSchema  json.RawMessage  `json:"inputSchema"`
	OutputSchema json.RawMessage  `json:"outputSchema,omitempty"`
	Annotations  *ToolAnnotations `json:"annotations,omitempty"`
	// Execution says how the tool may be called: as a task or not (task_server.go).
	Execution *ToolExecution `json:"execution,omitempty"`
	Meta      map[string]any `json:"_meta,omitempty"`
}

// ListToolsResult is the result of tools/list.
type ListToolsResult struct {
	Tools      []Tool `json:"tools"`
	NextCursor string `json:"nextCursor,omitempty"`
}

// CallToolParams are the params of tools/call.
type CallToolParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Meta      *RequestMeta    `json:"_meta,omitempty"`
}

// RequestMeta is the _meta object of a request's params.
type RequestMeta struct {
	// ProgressToken asks the receiver for progress notifications.
	ProgressToken json.RawMessage `json:"progressToken,omitempty"`
	// Other holds every other _meta key.
	Other map[string]json.RawMessage `json:"-"`
}

// MarshalJSON implements json.Marshaler, merging Other with progressToken.
func (m *RequestMeta) MarshalJSON() ([]byte, error) {
	out := make(map[string]json.RawMessage, len(m.Other)+1)
	for k, v := range m.Other {
		out[k] = v
	}
	if len(m.ProgressToken) > 0 {
		out["progressToken"] = m.ProgressToken
	}
	return json.Marshal(out)
}

// UnmarshalJSON implements json.Unmarshaler.
func (m *RequestMeta) UnmarshalJSON(b []byte) error {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	if t, ok := all["progressToken"]; ok {
		m.ProgressToken = t
		delete(all, "progressToken")
	}
	if len(all) > 0 {
		m.Other = all
	}
	return nil
}

// CallToolResult is the result of tools/call.
type CallToolResult struct {
	Content           []Content       `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
	Meta              map[string]any  `json:"_meta,omitempty"`

	// wire, when set, holds the whole result already encoded (a typed tool's, by
	// messageResult) from wireOff on: it is sent as is, and StructuredContent is a view of it;
	// Content is left empty.
	wire    []byte
	wireOff int
	wireBuf *wireBuf // wire's pool handle
}

// Text returns the text of the result's text blocks, joined by newlines.
func (r *CallToolResult) Text() string {
	if r == nil {
		return ""
	}
	var parts []string
	for _, c := range r.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// Content is one MCP content block. Type selects which other fields are set: "text" (Text),
// "image" and "audio" (Data, MIMEType), "resource" (Resource), "resource_link" (URI, Name,
// Title, Description, MIMEType, Size).
type Content struct {
	Type        string            `json:"type"`
	Text        string            `json:"text,omitempty"`
	Data        string            `json:"data,omitempty"`
	MIMEType    string            `json:"mimeType,omitempty"`
	Resource    *ResourceContents `json:"resource,omitempty"`
	URI         string            `json:"uri,omitempty"`
	Name        string            `json:"name,omitempty"`
	Title       string            `json:"title,omitempty"`
	Description string            `json:"description,omitempty"`
	Size        *int64            `json:"size,omitempty"`
	Annotations *Annotations      `json:"annotations,omitempty"`
	Meta        map[string]any    `json:"_meta,omitempty"`
}

// Annotations are the optional audience/priority hints of content blocks and resources.
type Annotations struct {
	Audience     []string `json:"audience,omitempty"`
	Priority     *float64 `json:"priority,omitempty"`
	LastModified string   `json:"lastModified,omitempty"`
}

// TextContent returns a text content block.
func TextContent(text string) Content { return Content{Type: "text", Text: text} }

// ImageContent returns an image block from base64 data.
func ImageContent(base64Data, mimeType string) Content {
	return Content{Type: "image", Data: base64Data, MIMEType: mimeType}
}

// AudioContent returns an audio block from base64 data.
func AudioContent(base64Data, mimeType string) Content {
	return Content{Type: "audio", Data: base64Data, MIMEType: mimeType}
}

// ResourceContents is the contents of a resource: Text or Blob (base64).
type ResourceContents struct {
	URI      string         `json:"uri"`
	MIMEType string         `json:"mimeType,omitempty"`
	Text     *string        `json:"text,omitempty"`
	Blob     *string        `json:"blob,omitempty"`
	Meta     map[string]any `json:"_meta,omitempty"`
}

// TextResource returns text resource contents.
func TextResource(uri, mimeType, text string) ResourceContents {
	return ResourceContents{URI: uri, MIMEType: mimeType, Text: &text}
}

// BlobResource returns binary resource contents from base64 data.
func BlobResource(uri, mimeType, base64Data string) ResourceContents {
	return ResourceContents{URI: uri, MIMEType: mimeType, Blob: &base64Data}
}

// Resource is a resource as resources/list describes it.
type Resource struct {
	URI         string         `json:"uri"`
	Name        string         `json:"name"`
	Title       string         `json:"title,omitempty"`
	Description string         `json:"description,omitempty"`
	MIMEType    string         `json:"mimeType,omitempty"`
	Size        *int64         `json:"size,omitempty"`
	Annotations *Annotations   `json:"annotations,omitempty"`
	Meta        map[string]any `json:"_meta,omitempty"`
}

// ResourceTemplate is a parameterised resource (RFC 6570 URI template).
type ResourceTemplate struct {
	URITemplate string         `json:"uriTemplate"`
	Name        string         `json:"name"`
	Title       string         `json:"title,omitempty"`
	Description string         `json:"description,omitempty"`
	MIMEType    string         `json:"mimeType,omitempty"`
	Annotations *Annotations   `json:"annotations,omitempty"`
	Meta        map[string]any `json:"_meta,omitempty"`
}

// ListResourcesResult is the result of resources/list.
type ListResourcesResult struct {
	Resources  []Resource `json:"resources"`
	NextCursor string     `json:"nextCursor,omitempty"`
}

// ListResourceTemplatesResult is the result of resources/templates/list.
type ListResourceTemplatesResult struct {
	ResourceTemplates []ResourceTemplate `json:"resourceTemplates"`
	NextCursor        string             `json:"nextCursor,omitempty"`
}

// ReadResourceResult is the result of resources/read.
type ReadResourceResult struct {
	Contents []ResourceContents `json:"contents"`
}

// Prompt is a prompt as prompts/list describes it.
type Prompt struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
	Meta        map[string]any   `json:"_meta,omitempty"`
}

// ListPromptsResult is the result of prompts/list.
type ListPromptsResult struct {
	Prompts    []Prompt `json:"prompts"`
	NextCursor string   `json:"nextCursor,omitempty"`
}

// PromptArgument is one argument of a prompt.
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// PromptMessage is one message of a prompt.
type PromptMessage struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// GetPromptResult is the result of prompts/get.
type GetPromptResult struct {
	Description string          `json:"description,omitempty"`
	Messages    []PromptMessage `json:"messages"`
}

// CompleteParams are the params of completion/complete.
type CompleteParams struct {
	Ref      CompleteRef `json:"ref"`
	Argument struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"argument"`
	Context *struct {
		Arguments map[string]string `json:"arguments,omitempty"`
	} `json:"context,omitempty"`
}

// CompleteRef names what is being completed: a prompt ("ref/prompt", Name) or a resource
// template ("ref/resource", URI).
type CompleteRef struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
	URI  string `json:"uri,omitempty"`
}

// Completion is the completion member of completion/complete's result.
type Completion struct {
	Values  []string `json:"values"`
	Total   *int     `json:"total,omitempty"`
	HasMore bool     `json:"hasMore,omitempty"`
}

// SamplingMessage is one message of a sampling request or result.
type SamplingMessage struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// CreateMessageParams are the params of sampling/createMessage.
type CreateMessageParams struct {
	Messages         []SamplingMessage `json:"messages"`
	ModelPreferences json.RawMessage   `json:"modelPreferences,omitempty"`
	SystemPrompt     string            `json:"systemPrompt,omitempty"`
	IncludeContext   string            `json:"includeContext,omitempty"`
	Temperature      *float64          `json:"temperature,omitempty"`
	MaxTokens        int               `json:"maxTokens"`
	StopSequences    []string          `json:"stopSequences,omitempty"`
	Metadata         json.RawMessage   `json:"metadata,omitempty"`
}

// CreateMessageResult is the result of sampling/createMessage.
type CreateMessageResult struct {
	Role       string  `json:"role"`
	Content    Content `json:"content"`
	Model      string  `json:"model"`
	StopReason string  `json:"stopReason,omitempty"`
}

// ElicitParams are the params of elicitation/create.
type ElicitParams struct {
	// Mode is "form" (the default when empty) or "url".
	Mode            string          `json:"mode,omitempty"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
	URL             string          `json:"url,omitempty"`
	ElicitationID   string          `json:"elicitationId,omitempty"`
}

// ElicitResult is the result of elicitation/create.
type ElicitResult struct {
	// Action is "accept", "decline" or "cancel".
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// Root is one of the client's roots.
type Root struct {
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
}

// ListRootsResult is the result of roots/list.
type ListRootsResult struct {
	Roots []Root `json:"roots"`
}

// LoggingLevel is a log level of notifications/message, in RFC 5424 order.
type LoggingLevel string

// The logging levels, least severe first.
const (
	LevelDebug     LoggingLevel = "debug"
	LevelInfo      LoggingLevel = "info"
	LevelNotice    LoggingLevel = "notice"
	LevelWarning   LoggingLevel = "warning"
	LevelError     LoggingLevel = "error"
	LevelCritical  LoggingLevel = "critical"
	LevelAlert     LoggingLevel = "alert"
	LevelEmergency LoggingLevel = "emergency"
)

var levelRank = map[LoggingLevel]int{
	LevelDebug: 0, LevelInfo: 1, LevelNotice: 2, LevelWarning: 3,
	LevelError: 4, LevelCritical: 5, LevelAlert: 6, LevelEmergency: 7,
}

// ProgressParams are the params of notifications/progress.
type ProgressParams struct {
	ProgressToken json.RawMessage `json:"progressToken"`
	Progress      float64         `json:"progress"`
	Total         *float64        `json:"total,omitempty"`
	Message       string          `json:"message,omitempty"`
	// Meta is the notification's _meta: a server-streaming tool's message is in it (see
	// ServerStream).
	Meta map[string]json.RawMessage `json:"_meta,omitempty"`
}

// LogMessageParams are the params of notifications/message.
type LogMessageParams struct {
	Level  LoggingLevel `json:"level"`
	Logger string       `json:"logger,omitempty"`
	Data   any          `json:"data"`
}

// CancelledParams are the params of notifications/cancelled.
type CancelledParams struct {
	RequestID *ID    `json:"requestId,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// MCP method names.
const (
	methodInitialize          = "initialize"
	methodPing                = "ping"
	methodToolsList           = "tools/list"
	methodToolsCall           = "tools/call"
	methodResourcesList       = "resources/list"
	methodResourceTemplates   = "resources/templates/list"
	methodResourcesRead       = "resources/read"
	methodResourcesSubscribe  = "resources/subscribe"
	methodResourcesUnsub      = "resources/unsubscribe"
	methodPromptsList         = "prompts/list"
	methodPromptsGet          = "prompts/get"
	methodComplete            = "completion/complete"
	methodSetLevel            = "logging/setLevel"
	methodCreateMessage       = "sampling/createMessage"
	methodElicit              = "elicitation/create"
	methodListRoots           = "roots/list"
	notifInitialized          = "notifications/initialized"
	notifCancelled            = "notifications/cancelled"
	notifProgress             = "notifications/progress"
	notifMessage              = "notifications/message"
	notifResourceUpdated      = "notifications/resources/updated"
	notifResourcesListChanged = "notifications/resources/list_changed"
	notifToolsListChanged     = "notifications/tools/list_changed"
	notifPromptsListChanged   = "notifications/prompts/list_changed"
	notifRootsListChanged     = "notifications/roots/list_changed"
)

// Header names.
const (
	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "Mcp-Protocol-Version"
	headerLastEventID     = "Last-Event-Id"
)
