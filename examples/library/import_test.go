package library_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"cloud.google.com/go/longrunning/autogen/longrunningpb"
	"connectrpc.com/connect"
	"github.com/protomcp/protomcp/connectmcp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	libraryv1 "github.com/protomcp/protomcp/examples/library/gen/library/v1"
	"github.com/protomcp/protomcp/examples/library/gen/library/v1/libraryv1connect"
	"github.com/protomcp/protomcp/examples/library/gen/library/v1/libraryv1mcp"
)

// TestImportBooks proves that ImportBooks, an rpc that returns a google.longrunning.Operation
// (AIP-151) not done, is one implementation for every protocol: a Connect client polls
// GetOperation until the operation is done with the books in its response, and the MCP
// client's generated ImportBooks (a tool that runs as a task, whose bridge polls the same
// Operations service) gets that response itself, decoded, and its handle the operation's
// metadata; the import's errors reach MCP as the service wrote them.
func TestImportBooks(t *testing.T) {
	t.Parallel()
	s := start(t)
	ctx := context.WithValue(testCtx(t), tokenKey, "admin-token")

	cc := libraryv1connect.NewLibraryServiceClient(http.DefaultClient, s.url)
	req := connect.NewRequest(&libraryv1.ImportBooksRequest{Books: []*libraryv1.CreateBookRequest{
		{Title: "Dawn", Author: "Octavia E. Butler", Year: 1987},
	}})
	req.Header().Set("Authorization", "Bearer admin-token")
	started, err := cc.ImportBooks(ctx, req)
	if err != nil {
		t.Fatalf("connect ImportBooks: %v", err)
	}
	if started.Msg.GetDone() || started.Msg.GetName() == "" {
		t.Fatalf("connect ImportBooks: the operation is done at once or has no name: %v", started.Msg)
	}
	// AIP-151: poll google.longrunning.Operations/GetOperation until the operation is done.
	get := connect.NewClient[longrunningpb.GetOperationRequest, longrunningpb.Operation](http.DefaultClient, s.url+connectmcp.GetOperationProcedure)
	var op *longrunningpb.Operation
	for op == nil || !op.GetDone() {
		res, err := get.CallUnary(ctx, connect.NewRequest(&longrunningpb.GetOperationRequest{Name: started.Msg.GetName()}))
		if err != nil {
			t.Fatalf("connect GetOperation(%s): %v", started.Msg.GetName(), err)
		}
		op = res.Msg
		select {
		case <-ctx.Done():
			t.Fatalf("the operation %s is never done: %v", op.GetName(), ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	viaConnect := new(libraryv1.ImportBooksResponse)
	if err := op.GetResponse().UnmarshalTo(viaConnect); err != nil {
		t.Fatalf("connect GetOperation: the done operation has no response: %v", op)
	}
	if got := viaConnect.GetBooks(); len(got) != 1 || got[0].GetId() != 6 || got[0].GetTitle() != "Dawn" {
		t.Errorf("connect ImportBooks: %v", got)
	}

	_, rc := mcpCaller(t, s)
	client := libraryv1mcp.NewLibraryServiceClient(rc)
	want := []*libraryv1.Book{
		{Id: 7, Title: "Lilith's Brood", Author: "Octavia E. Butler", Year: 1989, Available: true},
		{Id: 8, Title: "The Lathe of Heaven", Author: "Ursula K. Le Guin", Year: 1971, Available: true},
	}
	cctx, _ := withID(ctx)
	res, err := client.ImportBooks(cctx, &libraryv1.ImportBooksRequest{Books: []*libraryv1.CreateBookRequest{
		{Title: want[0].GetTitle(), Author: want[0].GetAuthor(), Year: want[0].GetYear()},
		{Title: want[1].GetTitle(), Author: want[1].GetAuthor(), Year: want[1].GetYear()},
	}})
	if err != nil {
		t.Fatalf("MCP ImportBooks: %v", err)
	}
	if !proto.Equal(res, &libraryv1.ImportBooksResponse{Books: want}) {
		t.Errorf("MCP ImportBooks: %v, want %v", res, want)
	}
	all, err := client.ListBooks(ctx, &libraryv1.ListBooksRequest{})
	if err != nil || len(all.GetBooks()) != 8 {
		t.Errorf("after the imports: %d books, %v; want 8", len(all.GetBooks()), err)
	}

	// The started form: a handle, whose Wait gives the same kind of result.
	cctx, _ = withID(ctx)
	h, err := client.StartImportBooks(cctx, &libraryv1.ImportBooksRequest{Books: []*libraryv1.CreateBookRequest{{Title: "Xenogenesis", Author: "Octavia E. Butler", Year: 1989}}})
	if err != nil {
		t.Fatalf("MCP StartImportBooks: %v", err)
	}
	if res, err := h.Wait(ctx); err != nil || len(res.GetBooks()) != 1 || res.GetBooks()[0].GetId() != 9 {
		t.Errorf("MCP StartImportBooks' Wait: %v, %v", res, err)
	}
	// The operation's metadata is the task's: the handle reads it, and so does one resumed
	// from the task's ID, once the task has ended too.
	wantMeta := &libraryv1.ImportBooksMetadata{Imported: 1, Total: 1}
	if meta, err := h.Metadata(ctx); err != nil || !proto.Equal(meta, wantMeta) {
		t.Errorf("MCP StartImportBooks' Metadata: %v, %v; want %v", meta, err, wantMeta)
	}
	if meta, err := client.ResumeImportBooks(h.ID()).Metadata(ctx); err != nil || !proto.Equal(meta, wantMeta) {
		t.Errorf("MCP ResumeImportBooks' Metadata: %v, %v; want %v", meta, err, wantMeta)
	}

	// An incomplete book: the service's InvalidArgument and its BadRequest, through MCP.
	m, _ := mcpCaller(t, s)
	cctx, _ = withID(ctx)
	_, err = client.ImportBooks(cctx, &libraryv1.ImportBooksRequest{Books: []*libraryv1.CreateBookRequest{{Title: "Untitled"}}})
	if code := m.code(err); code != codes.InvalidArgument {
		t.Fatalf("MCP ImportBooks of an incomplete book: %v (%v), want InvalidArgument", err, code)
	}
	if d := m.details(err); len(d) != 1 || d[0].(*errdetails.BadRequest).GetFieldViolations()[0].GetField() != "books[0].author" {
		t.Errorf("MCP ImportBooks of an incomplete book: details %v", d)
	}
}
