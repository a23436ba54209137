package query

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/rowio"
)

// collect runs a query and keeps its rows, failing once they take more
// than limit bytes as the process holds them (rowio.Limits.MaxResultBytes):
// the query is cancelled there, and the error says what to do instead.
func collect(ctx context.Context, st *chstore.Store, text string, limit int64) (*chstore.Result, error) {
	// Cancelled at the limit: the driver would read the rest of the
	// result before returning otherwise.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	res := &chstore.Result{}
	var held, rows int64
	err := st.Each(ctx, text, func(cols, types []string) error {
		res.Columns, res.Types = cols, types
		return nil
	}, func(row []any) error {
		held += rowBytes(row)
		rows++
		if held > limit {
			cancel()
			return fmt.Errorf("%w; add a LIMIT or aggregate, or write the rows out with INSERT INTO … SELECT or COPY INTO VOLUME",
				&rowio.LimitError{Limit: "MaxResultBytes", Value: limit, What: fmt.Sprintf("the query's result (%d rows so far) takes more memory in this process than allowed", rows)})
		}
		res.Rows = append(res.Rows, append([]any(nil), row...))
		return nil
	})
	return res, err
}

// rowBytes estimates what a row takes once kept: its slice, and per cell
// an interface and what it points to.
func rowBytes(row []any) int64 {
	n := int64(24)
	for _, v := range row {
		n += 16 + valueBytes(v)
	}
	return n
}

func valueBytes(v any) int64 {
	switch x := v.(type) {
	case nil:
		return 0
	case string:
		return 16 + int64(len(x))
	case []byte:
		return 24 + int64(len(x))
	case time.Time:
		return 24
	case *string:
		if x != nil {
			return 24 + int64(len(*x))
		}
		return 8
	}
	r := reflect.ValueOf(v)
	switch r.Kind() {
	case reflect.Pointer:
		if r.IsNil() {
			return 8
		}
		return 8 + valueBytes(r.Elem().Interface())
	case reflect.Slice, reflect.Array:
		n := int64(24)
		for i := 0; i < r.Len(); i++ {
			n += 16 + valueBytes(r.Index(i).Interface())
		}
		return n
	case reflect.Map:
		n := int64(48)
		it := r.MapRange()
		for it.Next() {
			n += 32 + valueBytes(it.Key().Interface()) + valueBytes(it.Value().Interface())
		}
		return n
	}
	return int64(r.Type().Size())
}
