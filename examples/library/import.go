package library

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"cloud.google.com/go/longrunning/autogen/longrunningpb"
	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/types/known/anypb"

	libraryv1 "github.com/protomcp/protomcp/examples/library/gen/library/v1"
	"github.com/protomcp/protomcp/runtime"
)

// ImportBooks implements LibraryServiceHandler: the books are added in one transaction (all or
// none), and the operation is done when the rpc returns, as AIP-151 allows, with the books
// and their new ids as its response, and how many were imported as its metadata. Over MCP the
// rpc is a tool that runs as a task; its result is that response, and the task's metadata
// says how far the import is as it goes (progress), then the operation's metadata.
func (s *Service) ImportBooks(ctx context.Context, req *connect.Request[libraryv1.ImportBooksRequest]) (*connect.Response[longrunningpb.Operation], error) {
	books := req.Msg.GetBooks()
	var bad errdetails.BadRequest
	for i, b := range books {
		if strings.TrimSpace(b.GetTitle()) == "" {
			bad.FieldViolations = append(bad.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: fmt.Sprintf("books[%d].title", i), Description: "must not be empty"})
		}
		if strings.TrimSpace(b.GetAuthor()) == "" {
			bad.FieldViolations = append(bad.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: fmt.Sprintf("books[%d].author", i), Description: "must not be empty"})
		}
	}
	if len(books) == 0 || len(bad.FieldViolations) > 0 {
		e := connect.NewError(connect.CodeInvalidArgument, errors.New("the import needs at least one book, each complete"))
		if d, err := connect.NewErrorDetail(&bad); err == nil && len(bad.FieldViolations) > 0 {
			e.AddDetail(d)
		}
		return nil, e
	}
	added, err := s.insertAll(ctx, books)
	if err != nil {
		return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("import books: %w", err))
	}
	response, err := anypb.New(&libraryv1.ImportBooksResponse{Books: added})
	if err != nil {
		return nil, connect.NewError(connect.CodeInternal, err)
	}
	metadata, err := anypb.New(&libraryv1.ImportBooksMetadata{Imported: int32(len(added)), Total: int32(len(books))})
	if err != nil {
		return nil, connect.NewError(connect.CodeInternal, err)
	}
	return connect.NewResponse(&longrunningpb.Operation{
		Name:     fmt.Sprintf("imports/%d-%d", added[0].GetId(), added[len(added)-1].GetId()),
		Metadata: metadata,
		Done:     true,
		Result:   &longrunningpb.Operation_Response{Response: response},
	}), nil
}

// insertAll adds books in one transaction and returns them with their ids.
func (s *Service) insertAll(ctx context.Context, books []*libraryv1.CreateBookRequest) ([]*libraryv1.Book, error) {
	tx, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	out := make([]*libraryv1.Book, 0, len(books))
	for i, b := range books {
		if err := progress(ctx, i, len(books)); err != nil {
			return nil, err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO books (title, author, year, available) VALUES (?, ?, ?, 1)`, b.GetTitle(), b.GetAuthor(), b.GetYear())
		if err != nil {
			return nil, err
		}
		id, err := res.LastInsertId()
		if err != nil {
			return nil, err
		}
		out = append(out, &libraryv1.Book{Id: id, Title: b.GetTitle(), Author: b.GetAuthor(), Year: b.GetYear(), Available: true})
	}
	return out, tx.Commit()
}

// progress publishes how far an import is, as the operation's metadata, when the rpc runs as
// an MCP task: the MCP bridge serves it in-process, so runtime.CallerFrom finds the MCP
// request, and the client reads it with the handle's Metadata. A call over Connect or gRPC
// has no MCP request, and a call that is not a task no task: nothing to publish then.
func progress(ctx context.Context, imported, total int) error {
	c := runtime.CallerFrom(ctx)
	if c == nil {
		return nil
	}
	return c.SetTaskMetadata(ctx, &libraryv1.ImportBooksMetadata{Imported: int32(imported), Total: int32(total)})
}
