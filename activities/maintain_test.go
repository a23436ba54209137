package activities

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/lakepipe/lakepipe/internal/errtext"
)

func TestMaintain(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want *wantErr
	}{
		{name: "done"},
		{name: "an error is retried", err: errors.New("clickhouse: connection refused"), want: &wantErr{msg: "clickhouse: connection refused"}},
		{name: "a long error is cut", err: errors.New(strings.Repeat("x", 1<<20)), want: &wantErr{msg: errtext.Cap(strings.Repeat("x", 1<<20), errtext.MaxMessage)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			eng := &fakeEngine{maintainErr: tt.err}
			a := &Activities{eng: eng}
			env := newTestEnv(t, a)
			_, err := env.ExecuteActivity(a.Maintain)
			checkErr(t, err, tt.want)
			if want := []string{"maintain"}; !slices.Equal(eng.calls, want) {
				t.Errorf("calls %q, want %q", eng.calls, want)
			}
		})
	}
}
