package loading

import (
	"github.com/lakepipe/lakepipe/internal/query"
	"github.com/lakepipe/lakepipe/internal/runcache"
)

// Loader runs COPY and volume pipes.
type Loader struct {
	query.Runner
	// Runs keeps opened volume pipes (see OpenPipe); shared by copies.
	Runs *runcache.Cache[*PipeRun]
}

// WithSchema returns a copy whose unqualified names live in schema.
func (c *Loader) WithSchema(schema string) *Loader {
	cp := *c
	cp.Cfg.Schema = schema
	return &cp
}
