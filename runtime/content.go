package runtime

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
)

// fromProtoToolResult converts an *mcpv1.ToolResult into the wire result.
func fromProtoToolResult(tr *mcpv1.ToolResult) (*CallToolResult, error) {
	res := &CallToolResult{IsError: tr.GetIsError(), Content: make([]Content, 0, len(tr.GetContent()))}
	for i, c := range tr.GetContent() {
		wc, err := ContentFromProto(c)
		if err != nil {
			return nil, Errorf(CodeInternalError, "tool result content[%d]: %v", i, err)
		}
		res.Content = append(res.Content, wc)
	}
	if sc := tr.GetStructuredContent(); sc != nil {
		b, err := protojson.Marshal(sc)
		if err != nil {
			return nil, Errorf(CodeInternalError, "tool result structured content: %v", err)
		}
		res.StructuredContent = b
	}
	return res, nil
}

// ContentFromProto converts one mcp.v1.Content message into a wire content block.
func ContentFromProto(c *mcpv1.Content) (Content, error) {
	switch k := c.GetKind().(type) {
	case *mcpv1.Content_Text:
		return TextContent(k.Text.GetText()), nil
	case *mcpv1.Content_Image:
		return ImageContent(base64.StdEncoding.EncodeToString(k.Image.GetData()), k.Image.GetMimeType()), nil
	case *mcpv1.Content_Audio:
		return AudioContent(base64.StdEncoding.EncodeToString(k.Audio.GetData()), k.Audio.GetMimeType()), nil
	case *mcpv1.Content_Resource:
		return Content{Type: "resource", Resource: resourceFromProto(k.Resource)}, nil
	case *mcpv1.Content_ResourceLink:
		return linkFromProto(k.ResourceLink), nil
	default:
		return Content{}, fmt.Errorf("content block with no kind set")
	}
}

// resourceFromProto converts an embedded resource: its text, its blob in Base64, or empty
// text when it has neither (the wire form needs one of them).
func resourceFromProto(r *mcpv1.EmbeddedResource) *ResourceContents {
	rc := ResourceContents{URI: r.GetUri(), MIMEType: r.GetMimeType()}
	switch v := r.GetContents().(type) {
	case *mcpv1.EmbeddedResource_Text:
		t := v.Text
		rc.Text = &t
	case *mcpv1.EmbeddedResource_Blob:
		b := base64.StdEncoding.EncodeToString(v.Blob)
		rc.Blob = &b
	default:
		empty := ""
		rc.Text = &empty
	}
	return &rc
}

// linkFromProto converts a resource link; its size only when it has one.
func linkFromProto(l *mcpv1.ResourceLink) Content {
	out := Content{Type: "resource_link", URI: l.GetUri(), Name: l.GetName(), Title: l.GetTitle(), Description: l.GetDescription(), MIMEType: l.GetMimeType()}
	if l.Size != nil {
		n := l.GetSize()
		out.Size = &n
	}
	return out
}

// toProtoToolResult converts a wire result into an *mcpv1.ToolResult, for typed clients of
// free-form-content tools. Blocks of unknown types are kept as text holding their JSON.
func toProtoToolResult(r *CallToolResult) (*mcpv1.ToolResult, error) {
	out := &mcpv1.ToolResult{IsError: r.IsError}
	for _, c := range r.Content {
		pc, err := ContentToProto(c)
		if err != nil {
			return nil, err
		}
		out.Content = append(out.Content, pc)
	}
	if len(r.StructuredContent) > 0 {
		out.StructuredContent = new(structpbStruct)
		if err := resultUnmarshal.Unmarshal(r.StructuredContent, out.StructuredContent); err != nil {
			return nil, fmt.Errorf("structuredContent: %w", err)
		}
	}
	return out, nil
}

// ContentToProto converts a wire content block into an mcp.v1.Content message.
func ContentToProto(c Content) (*mcpv1.Content, error) {
	switch c.Type {
	case "text":
		return &mcpv1.Content{Kind: &mcpv1.Content_Text{Text: &mcpv1.TextContent{Text: c.Text}}}, nil
	case "image", "audio":
		return mediaToProto(c)
	case "resource":
		if c.Resource == nil {
			return nil, fmt.Errorf("resource content without a resource")
		}
		er, err := resourceToProto(c.Resource)
		if err != nil {
			return nil, err
		}
		return &mcpv1.Content{Kind: &mcpv1.Content_Resource{Resource: er}}, nil
	case "resource_link":
		l := &mcpv1.ResourceLink{Uri: c.URI, Name: c.Name, Title: c.Title, Description: c.Description, MimeType: c.MIMEType, Size: c.Size}
		return &mcpv1.Content{Kind: &mcpv1.Content_ResourceLink{ResourceLink: l}}, nil
	default:
		b, _ := jsonMarshal(c)
		return &mcpv1.Content{Kind: &mcpv1.Content_Text{Text: &mcpv1.TextContent{Text: string(b)}}}, nil
	}
}

// mediaToProto converts an image or audio block, whose data travels in Base64.
func mediaToProto(c Content) (*mcpv1.Content, error) {
	data, err := base64.StdEncoding.DecodeString(c.Data)
	if err != nil {
		return nil, fmt.Errorf("%s content: data is not base64: %w", c.Type, err)
	}
	if c.Type == "image" {
		return &mcpv1.Content{Kind: &mcpv1.Content_Image{Image: &mcpv1.ImageContent{Data: data, MimeType: c.MIMEType}}}, nil
	}
	return &mcpv1.Content{Kind: &mcpv1.Content_Audio{Audio: &mcpv1.AudioContent{Data: data, MimeType: c.MIMEType}}}, nil
}

// resourceToProto converts an embedded resource's contents: a blob (from Base64) before text.
func resourceToProto(r *ResourceContents) (*mcpv1.EmbeddedResource, error) {
	er := &mcpv1.EmbeddedResource{Uri: r.URI, MimeType: r.MIMEType}
	switch {
	case r.Blob != nil:
		b, err := base64.StdEncoding.DecodeString(*r.Blob)
		if err != nil {
			return nil, fmt.Errorf("resource blob is not base64: %w", err)
		}
		er.Contents = &mcpv1.EmbeddedResource_Blob{Blob: b}
	case r.Text != nil:
		er.Contents = &mcpv1.EmbeddedResource_Text{Text: *r.Text}
	}
	return er, nil
}

type structpbStruct = structpb.Struct

var jsonMarshal = json.Marshal
