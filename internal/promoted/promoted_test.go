package promoted

import (
	"context"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// want is what testdata/wrappers prints: the compiler writes the wrappers of promoted methods
// and of value-receiver methods reached through a pointer; every other method is declared.
const want = `main.base.A declared
main.base.B declared
*main.base.A wrapper
*main.base.B wrapper
main.value.A declared
main.value.B wrapper
*main.value.A wrapper
*main.value.B wrapper
*main.pointer.A declared
*main.pointer.B wrapper
main.byPointer.A wrapper
main.byPointer.B declared
*main.byPointer.A wrapper
*main.byPointer.B wrapper
main.generic[int].A declared
main.generic[int].B wrapper
*main.generic[string].A wrapper
*main.generic[string].B wrapper
*main.genericPointer[int].A wrapper
*main.genericPointer[int].B declared
`

// TestWrapperBuilds builds testdata/wrappers as users build servers (by default, for a
// debugger, for a release) and runs each binary: the compiler's name for its wrappers must
// hold in all of them.
func TestWrapperBuilds(t *testing.T) {
	builds := map[string][]string{
		"default":  nil,
		"debugger": {"-gcflags=-N -l"},
		"release":  {"-trimpath", "-ldflags=-s -w"},
	}
	for name, flags := range builds {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			bin := filepath.Join(t.TempDir(), "wrappers")
			args := append(append([]string{"build", "-o", bin}, flags...), "./testdata/wrappers")
			out, err := exec.CommandContext(ctx, "go", args...).CombinedOutput()
			require.NoError(t, err, "go %s:\n%s", strings.Join(args, " "), out)
			out, err = exec.CommandContext(ctx, bin).Output()
			require.NoError(t, err)
			assert.Equal(t, want, string(out))
		})
	}
}

type b struct{}

func (b) M() {}

type embeds struct{ b }

type declares struct{ b }

func (declares) M() {}

// TestWrapperInProcess checks the test binary itself, and that an interface's methods, which
// have no code, are not wrappers.
func TestWrapperInProcess(t *testing.T) {
	m, _ := reflect.TypeOf(embeds{}).MethodByName("M")
	assert.True(t, Wrapper(m), "promoted")
	m, _ = reflect.TypeOf(declares{}).MethodByName("M")
	assert.False(t, Wrapper(m), "declared")
	m, _ = reflect.TypeOf((*interface{ M() })(nil)).Elem().MethodByName("M")
	assert.False(t, Wrapper(m), "an interface's method")
}

// The types above are only inspected by reflection; these uses keep staticcheck content.
var _ = []any{embeds{}.b, declares{}.b}
