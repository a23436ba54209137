package query

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/changes"
	"github.com/lakepipe/lakepipe/internal/sqlast"
)

// Stream modes.
const (
	StreamStandard   = "STANDARD"
	StreamAppendOnly = "APPEND_ONLY"
)

// streamColumns are the metadata columns a stream adds to its table's.
var streamColumns = []string{"__change_type", "__commit_version", "__commit_timestamp"}

func (e *Runner) StreamSpec(ctx context.Context, n sqlast.ObjectName) (schema, name string, spec catalog.StreamSpec, ok bool, err error) {
	if schema, name, err = e.Qualify(n); err != nil {
		return
	}
	ok, err = e.Cat.Get(ctx, catalog.KindStream, schema, name, &spec)
	return
}

// StreamState says whether a stream can be read: its table exists and its
// offset is within the table's change log.
func (e *Runner) StreamState(ctx context.Context, name string, spec catalog.StreamSpec) (tschema, tname string, tspec catalog.TableSpec, stale string, err error) {
	return e.streamStateWith(name, spec, func(schema, table string, out *catalog.TableSpec) (bool, error) {
		return e.Cat.Get(ctx, catalog.KindTable, schema, table, out)
	})
}

// streamStateWith is streamState reading the table's spec with get.
func (e *Runner) streamStateWith(name string, spec catalog.StreamSpec, get func(schema, table string, out *catalog.TableSpec) (bool, error)) (tschema, tname string, tspec catalog.TableSpec, stale string, err error) {
	var ok bool
	tschema, tname, ok = strings.Cut(spec.Table, ".")
	if !ok {
		return "", "", tspec, "", fmt.Errorf("table stream %s: bad table name %q", name, spec.Table)
	}
	if ok, err = get(tschema, tname, &tspec); err != nil {
		return "", "", tspec, "", err
	}
	if !ok {
		return "", "", tspec, "", fmt.Errorf("table stream %s: its table %s no longer exists; drop the stream (DROP TABLE STREAM %s)", name, spec.Table, name)
	}
	if !spec.TableCreatedAt.IsZero() && !spec.TableCreatedAt.Equal(tspec.CreatedAt) {
		stale = fmt.Sprintf("table stream %s is stale: its table %s was dropped and created again (at %s) since the stream was made; recreate it: CREATE OR REPLACE TABLE STREAM %s ON TABLE %s",
			name, spec.Table, tspec.CreatedAt.Format("2006-01-02 15:04:05"), name, spec.Table)
		return tschema, tname, tspec, stale, nil
	}
	if since, _ := strconv.ParseUint(tspec.Properties[changes.ChangesRetainedSince], 10, 64); since > 0 && spec.Offset < since && !(spec.Offset == 0 && spec.ShowInitialRows) {
		stale = fmt.Sprintf("table stream %s is stale: its offset (%s) is older than the change log %s keeps (changes since %s, data_retention_days); recreate it: CREATE OR REPLACE TABLE STREAM %s ON TABLE %s",
			name, VersionTime(spec.Offset), spec.Table, VersionTime(since), name, spec.Table)
	}
	return tschema, tname, tspec, stale, nil
}

// VersionTime renders a commit version as the time it stands for.
func VersionTime(v uint64) string {
	return time.Unix(0, int64(v)).UTC().Format("2006-01-02 15:04:05.000")
}

// streamRead is a stream a statement reads, and up to which version.
type streamRead struct {
	schema, name string
	hi           uint64
}

// ReadsChangeColumns reports whether a query may read a stream's metadata
// columns: it names one of them, or selects *.
func ReadsChangeColumns(q *sqlast.Query) bool {
	found := false
	sqlast.Inspect(q, func(n any) bool {
		switch x := n.(type) {
		case *sqlast.Select:
			found = found || slices.ContainsFunc(x.Items, func(it sqlast.SelectItem) bool { return it.Star })
		case *sqlast.ColumnRef:
			last := x.Parts[len(x.Parts)-1]
			found = found || slices.ContainsFunc(streamColumns, func(c string) bool { return strings.EqualFold(c, last) })
		}
		return !found
	})
	return found
}

// streamSource renders a stream as a subquery of its changes since its
// offset, and remembers the version read up to, so that a DML statement
// reading it can consume it.
func (s *Session) streamSource(schema, name string, spec catalog.StreamSpec) (string, error) {
	e := s.e
	tschema, tname, tspec, stale, err := e.streamStateWith(name, spec, func(schema, table string, out *catalog.TableSpec) (bool, error) {
		return s.cachedGet(catalog.KindTable, schema, table, out)
	})
	if err != nil {
		return "", err
	}
	if stale != "" {
		return "", fmt.Errorf("%s", stale)
	}
	key := schema + "." + name
	r, ok := s.streams[key]
	if !ok {
		r = streamRead{schema: schema, name: name, hi: changes.ChangeReadHorizon()}
		if r.hi < spec.Offset {
			r.hi = spec.Offset // a stream created in the last moments
		}
		if s.streams == nil {
			s.streams = map[string]streamRead{}
		}
		s.streams[key] = r
	}
	how := changes.ChangeRead{AppendOnly: spec.Mode == StreamAppendOnly, Initial: spec.ShowInitialRows, Meta: !s.noMeta, GlobalIn: s.e.St.Cluster() != ""}
	q, err := changes.ChangeQuery(tschema, tname, tspec, spec.Offset, r.hi, how, func(from uint64) ([]changes.CommitRef, error) {
		return s.readCommits(tschema, tname, from)
	})
	if err != nil {
		return "", err
	}
	return "(" + q + ")", nil
}

// ConsumeStreams moves the offsets of the streams the statement read to
// where it read them: called once its write succeeded.
func (s *Session) ConsumeStreams() error {
	keys := make([]string, 0, len(s.streams))
	for k := range s.streams {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		r := s.streams[k]
		var spec catalog.StreamSpec
		ok, err := s.e.Cat.Get(s.ctx, catalog.KindStream, r.schema, r.name, &spec)
		if err != nil {
			return fmt.Errorf("table stream %s: its offset did not move: %w", r.name, err)
		}
		if !ok || spec.Offset >= r.hi {
			continue
		}
		spec.Offset, spec.ConsumedAt = r.hi, time.Now().UTC()
		// From here on the stream starts from a version, not from its
		// table's initial rows.
		spec.ShowInitialRows = false
		if err := s.e.Cat.Put(s.ctx, catalog.KindStream, r.schema, r.name, spec, ""); err != nil {
			return fmt.Errorf("table stream %s: its offset did not move: %w", r.name, err)
		}
	}
	return nil
}
