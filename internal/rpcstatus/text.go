// Package rpcstatus writes a google.rpc status for a model to read: the bridges of grpc-go
// (grpcmcp) and connect-go (connectmcp) turn a failed call into a tool error with this text.
package rpcstatus

import (
	"fmt"
	"strings"

	rpccode "google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
)

// Text describes a status for a model: "NOT_FOUND: book 7 does not exist" (the code as
// google.rpc.Code spells it, the form gRPC's documentation and most logs use), then one line
// per detail it can act on (a field to fix, when to retry, what is missing). Details of other
// types are left out.
func Text(code int32, msg string, details []any) string {
	var b strings.Builder
	b.WriteString(rpccode.Code(code).String())
	if msg != "" {
		b.WriteString(": ")
		b.WriteString(msg)
	}
	for _, d := range details {
		writeDetail(&b, d)
	}
	return b.String()
}

// writeDetail appends the lines of one google.rpc detail, if it is of a kind a model can act on.
func writeDetail(b *strings.Builder, d any) {
	switch d := d.(type) {
	case *errdetails.BadRequest:
		for _, v := range d.GetFieldViolations() {
			fmt.Fprintf(b, "\nfield %s: %s", v.GetField(), v.GetDescription())
		}
	case *errdetails.RetryInfo:
		if d.GetRetryDelay() != nil {
			fmt.Fprintf(b, "\nretry after %s", d.GetRetryDelay().AsDuration())
		} else {
			b.WriteString("\nretry later")
		}
	case *errdetails.PreconditionFailure:
		for _, v := range d.GetViolations() {
			fmt.Fprintf(b, "\nprecondition %s %s: %s", v.GetType(), v.GetSubject(), v.GetDescription())
		}
	case *errdetails.QuotaFailure:
		for _, v := range d.GetViolations() {
			fmt.Fprintf(b, "\nquota %s: %s", v.GetSubject(), v.GetDescription())
		}
	case *errdetails.ResourceInfo:
		fmt.Fprintf(b, "\nresource %s %s", d.GetResourceType(), d.GetResourceName())
		if d.GetDescription() != "" {
			fmt.Fprintf(b, ": %s", d.GetDescription())
		}
	case *errdetails.ErrorInfo:
		fmt.Fprintf(b, "\nreason %s", d.GetReason())
		if d.GetDomain() != "" {
			fmt.Fprintf(b, " (%s)", d.GetDomain())
		}
	case *errdetails.Help:
		for _, l := range d.GetLinks() {
			fmt.Fprintf(b, "\nsee %s: %s", l.GetDescription(), l.GetUrl())
		}
	case *errdetails.LocalizedMessage:
		fmt.Fprintf(b, "\n%s", d.GetMessage())
	}
}
