package loading

import (
	"context"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/query"
	"github.com/lakepipe/lakepipe/internal/runcache"
)

// Loader runs COPY and volume pipes.
type Loader struct {
	query.Runner
	// Runs keeps opened volume pipes (see OpenPipe); shared by copies.
	Runs *runcache.Cache[*PipeRun]
	// EmptyTracked empties a change-tracked table as a DELETE of all its
	// rows, through its change log (the engine's DELETE), for COPY
	// OVERWRITE: a TRUNCATE would hide the rows' going from its streams
	// and dynamic tables.
	EmptyTracked func(ctx context.Context, schema, name string, spec catalog.TableSpec) error
}

// WithSchema returns a copy whose unqualified names live in schema.
func (c *Loader) WithSchema(schema string) *Loader {
	cp := *c
	cp.Cfg.Schema = schema
	return &cp
}
