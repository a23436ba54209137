package loading

import "github.com/lakepipe/lakepipe/internal/query"

// Loader runs COPY and volume pipes.
type Loader struct {
	query.Runner
	// runs keeps opened volume pipes (see OpenPipe); shared by copies.
	Runs *RunCache
}

// WithSchema returns a copy whose unqualified names live in schema.
func (c *Loader) WithSchema(schema string) *Loader {
	cp := *c
	cp.Cfg.Schema = schema
	return &cp
}
