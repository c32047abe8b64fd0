package main

import (
	"strings"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
)

// Tools that run as MCP tasks: (mcp.v1.tool).task_support, and rpcs that return
// google.longrunning.Operation, whose (google.longrunning.operation_info) names the message
// the handler returns (AIP-151). The plugin reads operation_info from the rpc's options
// without linking the Go code of google/longrunning: a user's proto may import it, but the
// plugin does not need its Go package.

const (
	// operationName is the message of an rpc that runs as a long-running operation.
	operationName = "google.longrunning.Operation"
	// operationInfoName and operationInfoNumber identify the extension
	// (google.longrunning.operation_info) of google.protobuf.MethodOptions.
	operationInfoName   = "google.longrunning.operation_info"
	operationInfoNumber = 1049
)

// operationInfo is what (google.longrunning.operation_info) says of an rpc.
type operationInfo struct {
	responseType, metadataType string
}

// readOperationInfo reads (google.longrunning.operation_info) from opts: from the options'
// unknown fields, where it is when nothing resolved it, or from the extension field when
// something did (the Go code of google/longrunning linked in, or a resolver made of the
// request's own files).
func readOperationInfo(opts *descriptorpb.MethodOptions) (operationInfo, bool) {
	if opts == nil {
		return operationInfo{}, false
	}
	if info, ok := unknownOperationInfo(opts.ProtoReflect().GetUnknown()); ok {
		return info, true
	}
	var info operationInfo
	found := false
	opts.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if !fd.IsExtension() || fd.FullName() != operationInfoName || fd.Message() == nil {
			return true
		}
		m := v.Message()
		get := func(name protoreflect.Name) string {
			if f := m.Descriptor().Fields().ByName(name); f != nil {
				return m.Get(f).String()
			}
			return ""
		}
		info, found = operationInfo{responseType: get("response_type"), metadataType: get("metadata_type")}, true
		return false
	})
	return info, found
}

// unknownOperationInfo finds operation_info (field 1049, an OperationInfo: response_type 1,
// metadata_type 2) in the unknown fields of MethodOptions.
func unknownOperationInfo(b []byte) (operationInfo, bool) {
	var info operationInfo
	found := false
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return operationInfo{}, false
		}
		b = b[n:]
		if num != operationInfoNumber || typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return operationInfo{}, false
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return operationInfo{}, false
		}
		b = b[n:]
		found = true
		mergeOperationInfo(&info, v) // repeated occurrences of a message field merge
	}
	return info, found
}

// mergeOperationInfo reads the fields of an encoded OperationInfo into info.
func mergeOperationInfo(info *operationInfo, b []byte) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return
		}
		b = b[n:]
		if typ == protowire.BytesType && (num == 1 || num == 2) {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return
			}
			b = b[n:]
			if num == 1 {
				info.responseType = string(v)
			} else {
				info.metadataType = string(v)
			}
			continue
		}
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return
		}
		b = b[n:]
	}
}

// taskSupportIdent is the runtime.TaskSupport constant of a tool, or "" for one that forbids tasks.
func (t *tool) taskSupportIdent() string {
	switch t.taskSupport {
	case mcpv1.TaskSupport_TASK_SUPPORT_OPTIONAL:
		return "TaskOptional"
	case mcpv1.TaskSupport_TASK_SUPPORT_REQUIRED:
		return "TaskRequired"
	}
	return ""
}

// isTask reports whether the tool may run as a task: its client gets Start and Resume.
func (t *tool) isTask() bool { return t.taskSupportIdent() != "" }

// taskTool settles the task support of the tool t from its options, and for an rpc that
// returns google.longrunning.Operation, the message its handler returns and its client
// decodes: operation_info's response_type, looked up in messages. Such an rpc is a task tool,
// required unless task_support says otherwise; it cannot forbid tasks.
func taskTool(f *protogen.File, t *tool, methodOpts *descriptorpb.MethodOptions, opts *mcpv1.ToolOptions, messages map[protoreflect.FullName]*protogen.Message) error {
	fail := methodFail(f, t.Method)
	t.taskSupport = opts.GetTaskSupport()
	if t.Output.Desc.FullName() != operationName {
		if t.taskSupport == mcpv1.TaskSupport_TASK_SUPPORT_UNSPECIFIED {
			t.taskSupport = mcpv1.TaskSupport_TASK_SUPPORT_FORBIDDEN
		}
		if t.isTask() && t.streaming {
			return fail("a server-streaming rpc cannot run as a task: its messages are progress of one call")
		}
		return nil
	}
	if t.streaming {
		return fail("an rpc that returns %s cannot be server-streaming", operationName)
	}
	switch t.taskSupport {
	case mcpv1.TaskSupport_TASK_SUPPORT_UNSPECIFIED:
		t.taskSupport = mcpv1.TaskSupport_TASK_SUPPORT_REQUIRED
	case mcpv1.TaskSupport_TASK_SUPPORT_FORBIDDEN:
		return fail("an rpc that returns %s runs as a task: task_support cannot be TASK_SUPPORT_FORBIDDEN", operationName)
	}
	info, ok := readOperationInfo(methodOpts)
	if !ok || info.responseType == "" {
		return fail("an rpc that returns %s needs option (google.longrunning.operation_info) with a response_type: the message its handler returns (AIP-151)", operationName)
	}
	resp := lookupMessage(messages, t.Desc.ParentFile().Package(), info.responseType)
	if resp == nil {
		return fail("operation_info.response_type %q is not a message this file imports", info.responseType)
	}
	if info.metadataType != "" {
		if t.metadata = lookupMessage(messages, t.Desc.ParentFile().Package(), info.metadataType); t.metadata == nil {
			return fail("operation_info.metadata_type %q is not a message this file imports", info.metadataType)
		}
	}
	// The tool is the rpc as if it returned the response: its handler, its schema, its client.
	m := *t.Method
	m.Output = resp
	t.operation, t.Method = t.Output, &m
	return nil
}

// lookupMessage finds the message name names, qualified or relative to the package pkg
// (operation_info's rule: "a fully-qualified message name must be used" outside the rpc's
// package).
func lookupMessage(messages map[protoreflect.FullName]*protogen.Message, pkg protoreflect.FullName, name string) *protogen.Message {
	name = strings.TrimPrefix(name, ".")
	if pkg != "" {
		if m := messages[pkg+"."+protoreflect.FullName(name)]; m != nil {
			return m
		}
	}
	return messages[protoreflect.FullName(name)]
}

// handleType is the name of the handle type of an Operation rpc with a metadata_type: a
// runtime.TaskHandle with a Metadata method that decodes the task's metadata.
func (sg *serviceGen) handleType(t *tool) string { return sg.name + t.GoName + "Handle" }

// handleTypes writes the handle type of each Operation rpc of the service that names a
// metadata_type: it embeds the runtime.TaskHandle (ID, Status, Wait, Cancel) and adds
// Metadata, which runtime.TaskMetadataOf answers.
func (sg *serviceGen) handleTypes() {
	g := sg.g
	for _, t := range sg.s.tools {
		if t.metadata == nil {
			continue
		}
		name := sg.handleType(t)
		g.P("// ", name, " is a handle to a task of the ", t.name, " tool: a runtime.TaskHandle whose")
		g.P("// Metadata reads the operation's metadata (", t.metadata.Desc.FullName(), ").")
		g.P("type ", name, " struct {")
		g.P("*", runtimePackage.Ident("TaskHandle"), "[", t.Output.GoIdent, "]")
		g.P("}")
		g.P()
		g.P("// Metadata asks the server for the task's state (tasks/get) and returns the metadata its")
		g.P("// handler last published; nil, nil when it published none.")
		g.P("func (h *", name, ") Metadata(ctx ", sg.ctx, ") (*", t.metadata.GoIdent, ", error) {")
		g.P("return ", runtimePackage.Ident("TaskMetadataOf"), "[", t.metadata.GoIdent, "](ctx, h.TaskHandle)")
		g.P("}")
		g.P()
	}
}

// taskMethodClash says which client method the Start or Resume method of a task tool of s
// would collide with, or "".
func (s *service) taskMethodClash() string {
	names := map[string]bool{}
	for _, t := range s.tools {
		names[t.GoName] = true
	}
	for _, p := range s.prompts {
		names[p.GoName] = true
	}
	for _, r := range s.resources {
		names[r.GoName] = true
	}
	for _, t := range s.tools {
		if !t.isTask() {
			continue
		}
		for _, n := range []string{"Start" + t.GoName, "Resume" + t.GoName} {
			if names[n] {
				return "the client method " + n + " of the task tool " + t.name + " collides with the rpc " + n + ": rename one of them"
			}
		}
	}
	return ""
}

// indexMessages maps every message of the plugin's files, nested ones too, by full name.
func indexMessages(gen *protogen.Plugin) map[protoreflect.FullName]*protogen.Message {
	out := map[protoreflect.FullName]*protogen.Message{}
	var add func([]*protogen.Message)
	add = func(ms []*protogen.Message) {
		for _, m := range ms {
			out[m.Desc.FullName()] = m
			add(m.Messages)
		}
	}
	for _, f := range gen.Files {
		add(f.Messages)
	}
	return out
}

// implOut is the response type of e's implementation, qualified for the file: the rpc's own
// output (google.longrunning.Operation for an Operation rpc).
func (sg *serviceGen) implOut(e rpcEntry) string {
	if e.op != nil {
		return sg.g.QualifiedGoIdent(e.op.GoIdent)
	}
	return sg.out(e.m)
}

// hasOperation reports whether a tool of the service returns a google.longrunning.Operation.
func (sg *serviceGen) hasOperation() bool {
	for _, t := range sg.s.tools {
		if t.operation != nil {
			return true
		}
	}
	return false
}

// operationRequests is the type arguments GetOperationRequest and CancelOperationRequest of
// the generic function that serves e, an Operation rpc (grpcmcp.UnaryOperation,
// grpcmcp.ForwardOperation, connectmcp.UnaryOperation): the messages of google.longrunning
// beside its Operation, which the bridge sends to poll and to cancel it.
func (sg *serviceGen) operationRequests(e rpcEntry) string {
	pkg := e.op.GoIdent.GoImportPath
	return sg.g.QualifiedGoIdent(pkg.Ident("GetOperationRequest")) + ", " + sg.g.QualifiedGoIdent(pkg.Ident("CancelOperationRequest"))
}
