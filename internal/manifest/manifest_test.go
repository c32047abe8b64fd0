package manifest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMarshalIsStable(t *testing.T) {
	f := &File{
		Source: "a.proto", Package: "a",
		Tools: []Tool{
			{Name: "b", RPC: "a.S/B", Description: "B.", InputSchema: json.RawMessage(`{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"string"}}}`)},
			{Name: "a", RPC: "a.S/A", Description: "A.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		},
		Resources: []Resource{{Name: "y", URI: "x://y"}, {Name: "t", URITemplate: "x://t/{id}"}},
	}
	b, err := Marshal(f)
	require.NoError(t, err)
	assert.Equal(t, "a", f.Tools[0].Name, "tools sorted by name")
	assert.Equal(t, "x://t/{id}", f.Resources[0].Key(), "resources sorted by URI or template")
	assert.Contains(t, string(b), `"properties": {
          "z": {`, "schema keys keep the plugin's order, indented")
	assert.Equal(t, byte('\n'), b[len(b)-1])

	again, err := Unmarshal(b)
	require.NoError(t, err)
	b2, err := Marshal(again)
	require.NoError(t, err)
	assert.Equal(t, string(b), string(b2), "decode and encode is the identity")
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	b, err := Marshal(&File{Source: "a.proto", Package: "a"})
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "a.mcp.json"), b, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "other.json"), []byte(`{}`), 0o644))

	ms, err := Load(dir)
	require.NoError(t, err)
	require.Len(t, ms, 1, "only *.mcp.json files, recursively")
	assert.Equal(t, "a.proto", ms[0].Source)

	_, err = Load(filepath.Join(dir, "other.json"))
	assert.ErrorContains(t, err, "not a protomcp manifest")
	_, err = Load(t.TempDir())
	assert.ErrorContains(t, err, "no .mcp.json file")
}

func TestEffectiveAnnotations(t *testing.T) {
	ro, d, i, ow := (*Annotations)(nil).Effective()
	assert.Equal(t, []bool{false, true, false, true}, []bool{ro, d, i, ow}, "the spec's defaults")
	f := false
	ro, d, i, ow = (&Annotations{DestructiveHint: &f, OpenWorldHint: &f}).Effective()
	assert.Equal(t, []bool{false, false, false, false}, []bool{ro, d, i, ow})
}
