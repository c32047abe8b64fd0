// Package tools implements the benchmark's three tools once per SDK, with the same JSON
// shapes everywhere: echo {text} -> {text}, items {n} -> {items: [{id, name, score, active}]},
// slow {ms} -> {ms}. Results go out as structuredContent plus a text mirror of the same JSON.
package tools

import (
	"context"
	"fmt"
	"strconv"
	"time"

	benchv1 "github.com/protomcp/protomcp/bench/gen/bench/v1"
)

// MaxItems bounds the items tool's n.
const MaxItems = 100000

// EchoArgs and the types below are the tools' JSON shapes as Go structs, for the SDKs that
// work with encoding/json. Zero values are left out, as protojson leaves them out.
type EchoArgs struct {
	Text string `json:"text,omitempty"`
}

// EchoResult is the result of echo.
type EchoResult struct {
	Text string `json:"text,omitempty"`
}

// ItemsArgs are the arguments of items.
type ItemsArgs struct {
	N int32 `json:"n,omitempty"`
}

// Item is one item of an items result.
type Item struct {
	ID     int32   `json:"id,omitempty"`
	Name   string  `json:"name,omitempty"`
	Score  float64 `json:"score,omitempty"`
	Active bool    `json:"active,omitempty"`
}

// ItemsResult is the result of items.
type ItemsResult struct {
	Items []Item `json:"items,omitempty"`
}

// SlowArgs are the arguments of slow.
type SlowArgs struct {
	Ms int32 `json:"ms,omitempty"`
}

// SlowResult is the result of slow.
type SlowResult struct {
	Ms int32 `json:"ms,omitempty"`
}

// Names of the tools.
const (
	Echo  = "echo"
	Items = "items"
	Slow  = "slow"
)

func checkN(n int32) error {
	if n < 0 || n > MaxItems {
		return fmt.Errorf("n must be between 0 and %d, got %d", MaxItems, n)
	}
	return nil
}

func itemName(id int) string { return "item-" + strconv.Itoa(id) }

// MakeItems returns the n items of an items result.
func MakeItems(n int32) ([]Item, error) {
	if err := checkN(n); err != nil {
		return nil, err
	}
	out := make([]Item, n)
	for i := range out {
		id := i + 1
		out[i] = Item{ID: int32(id), Name: itemName(id), Score: float64(id) / 2, Active: id%2 == 0}
	}
	return out, nil
}

// Sleep sleeps for ms milliseconds or until ctx is done.
func Sleep(ctx context.Context, ms int32) error {
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Proto implements the generated benchv1mcp.BenchServiceHandler for protomcp.
type Proto struct{}

// Echo implements echo.
func (Proto) Echo(_ context.Context, in *benchv1.EchoRequest) (*benchv1.EchoResponse, error) {
	return &benchv1.EchoResponse{Text: in.GetText()}, nil
}

// Items implements items.
func (Proto) Items(_ context.Context, in *benchv1.ItemsRequest) (*benchv1.ItemsResponse, error) {
	n := in.GetN()
	if err := checkN(n); err != nil {
		return nil, err
	}
	items := make([]*benchv1.Item, n)
	for i := range items {
		id := i + 1
		items[i] = &benchv1.Item{Id: int32(id), Name: itemName(id), Score: float64(id) / 2, Active: id%2 == 0}
	}
	return &benchv1.ItemsResponse{Items: items}, nil
}

// Slow implements slow.
func (Proto) Slow(ctx context.Context, in *benchv1.SlowRequest) (*benchv1.SlowResponse, error) {
	if err := Sleep(ctx, in.GetMs()); err != nil {
		return nil, err
	}
	return &benchv1.SlowResponse{Ms: in.GetMs()}, nil
}
