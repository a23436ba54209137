package kafkaload

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/changes"
	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/errtext"
	"github.com/lakepipe/lakepipe/internal/fileread"
	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/internal/kafka"
	"github.com/lakepipe/lakepipe/internal/progress"
	"github.com/lakepipe/lakepipe/internal/query"
	"github.com/lakepipe/lakepipe/internal/recordeval"
	"github.com/lakepipe/lakepipe/internal/rowio"
	"github.com/lakepipe/lakepipe/internal/runcache"
	"github.com/lakepipe/lakepipe/internal/sqlast"
	"github.com/lakepipe/lakepipe/internal/sqlparse"
	"github.com/lakepipe/lakepipe/internal/staging"
	"github.com/lakepipe/lakepipe/schemas"
)

// Consumer loads Kafka pipes' batches.
type Consumer struct {
	query.Runner
	// kafka keeps each Kafka pipe's client between its batches; shared by
	// copies.
	Kafka *kafka.Pool
	// KafkaRuns keeps opened Kafka pipes (see OpenKafkaPipe); shared by
	// copies.
	KafkaRuns *runcache.Cache[*KafkaPipeRun]
}

// WithSchema returns a copy whose unqualified names live in schema.
func (c *Consumer) WithSchema(schema string) *Consumer {
	cp := *c
	cp.Cfg.Schema = schema
	return &cp
}

// readKafka is a READ_KAFKA call's arguments:
//
//	READ_KAFKA(bootstrap, topic, topic_pattern, group_id, start_offset,
//	           end_offset, start_timestamp, end_timestamp, key_format,
//	           value_format, max_errors, map(k, v, …))
type readKafka struct {
	Src         kafka.Source
	KeyFormat   string
	ValueFormat string
	MaxErrors   int64
	Secrets     []string // values of secret map keys, kept out of outputs
}

// KafkaQuery finds the READ_KAFKA call of a pipe's SELECT.
func KafkaQuery(q *sqlast.Query) (*sqlast.Select, *sqlast.FuncCall, error) {
	sel, ok := q.Body.(*sqlast.Select)
	if !ok || len(q.With) > 0 || q.OrderBy != nil || q.Limit != nil {
		return nil, nil, fmt.Errorf("a Kafka pipe's COPY reads FROM (SELECT … FROM READ_KAFKA(…) [WHERE …]): no UNION, WITH, ORDER BY or LIMIT")
	}
	if len(sel.From) != 1 {
		return nil, nil, fmt.Errorf("a Kafka pipe's SELECT reads from exactly one READ_KAFKA(…)")
	}
	fr, ok := sel.From[0].(*sqlast.FuncRef)
	if !ok || fr.Func.Name != "read_kafka" {
		return nil, nil, fmt.Errorf("a pipe's COPY INTO … FROM (SELECT …) must read FROM READ_KAFKA(…) (or use FROM VOLUME for files)")
	}
	if sel.GroupBy != nil || sel.Having != nil || sel.Distinct {
		return nil, nil, fmt.Errorf("a Kafka pipe's SELECT is evaluated record by record: GROUP BY, HAVING and DISTINCT cannot be used")
	}
	return sel, fr.Func, nil
}

func ParseReadKafka(fc *sqlast.FuncCall) (readKafka, error) {
	var rk readKafka
	const usage = "READ_KAFKA(bootstrap, topic, '', group_id, '', '', '', '', key_format, value_format, max_errors, map(…))"
	if len(fc.Args) != 12 {
		return rk, fmt.Errorf("READ_KAFKA takes 12 arguments, %d given: %s", len(fc.Args), usage)
	}
	str := func(i int, what string) (string, error) {
		l, ok := fc.Args[i].(*sqlast.Literal)
		if !ok || (l.Kind != sqlast.LitString && l.Kind != sqlast.LitNumber) {
			return "", fmt.Errorf("READ_KAFKA argument %d (%s) must be a string literal: %s", i+1, what, usage)
		}
		return strings.TrimSpace(l.Value), nil
	}
	bootstrap, err := str(0, "bootstrap servers")
	if err != nil {
		return rk, err
	}
	for _, b := range strings.Split(bootstrap, ",") {
		if b = strings.TrimSpace(b); b != "" {
			rk.Src.Bootstrap = append(rk.Src.Bootstrap, b)
		}
	}
	if rk.Src.Topic, err = str(1, "topic"); err != nil {
		return rk, err
	}
	if pat, err := str(2, "topic pattern"); err != nil {
		return rk, err
	} else if pat != "" {
		return rk, fmt.Errorf("READ_KAFKA: a topic pattern (argument 3) is not supported: a pipe reads one topic; leave it '' and create one pipe per topic")
	}
	if rk.Src.Group, err = str(3, "group_id"); err != nil {
		return rk, err
	}
	if rk.Src.Group == "" {
		return rk, fmt.Errorf("READ_KAFKA: the group_id (argument 4) is required: the pipe mirrors its offsets there")
	}
	for i := 4; i < 8; i++ {
		if v, err := str(i, "offset or timestamp bound"); err != nil {
			return rk, err
		} else if v != "" {
			return rk, fmt.Errorf("READ_KAFKA: argument %d (start/end offsets and timestamps) must be '' in a pipe: the pipe manages its offsets (map('kafka.auto.offset.reset', 'latest') starts a new pipe at the end of the topic)", i+1)
		}
	}
	for i, p := range []*string{&rk.KeyFormat, &rk.ValueFormat} {
		if *p, err = str(8+i, "key/value format"); err != nil {
			return rk, err
		}
		*p = strings.ToLower(*p)
		if *p != "raw" && *p != "json" {
			return rk, fmt.Errorf("READ_KAFKA: the %s format (argument %d) is %q: expected 'raw' or 'json'", []string{"key", "value"}[i], 9+i, *p)
		}
	}
	me, err := str(10, "max_errors")
	if err != nil {
		return rk, err
	}
	if rk.MaxErrors, err = strconv.ParseInt(me, 10, 64); err != nil || rk.MaxErrors < 0 {
		return rk, fmt.Errorf("READ_KAFKA: max_errors (argument 11) is %q: expected a whole number ≥ 0", me)
	}
	m, ok := fc.Args[11].(*sqlast.FuncCall)
	if !ok || m.Name != "map" || len(m.Args)%2 != 0 {
		return rk, fmt.Errorf("READ_KAFKA: the last argument must be map('key', 'value', …)")
	}
	rk.Src.Config = map[string]string{}
	for i := 0; i < len(m.Args); i += 2 {
		k, kok := m.Args[i].(*sqlast.Literal)
		v, vok := m.Args[i+1].(*sqlast.Literal)
		if !kok || !vok {
			return rk, fmt.Errorf("READ_KAFKA: map(…) takes string literals")
		}
		rk.Src.Config[k.Value] = v.Value
		if kafka.SecretKey(k.Value) && v.Value != "" {
			rk.Secrets = append(rk.Secrets, v.Value)
		}
	}
	if err := rk.Src.Validate(); err != nil {
		return rk, err
	}
	return rk, nil
}

// KafkaPipeRun is what a Kafka pipe's activities need.
type KafkaPipeRun struct {
	e      *Consumer
	Name   string
	Spec   catalog.PipeSpec
	rk     readKafka
	prog   *recordeval.Program
	target core.LoadTarget
	// keepReplaced, stageKey: see loading.PipeRun.
	keepReplaced bool
	stageKey     string
	source       []int  // target column ← program column
	typed        []bool // program columns handed over as values, not text
	// Warn reports trouble that does not fail a batch (nil: ignored).
	Warn func(msg string)
	// dlt is the dead-letter table (DEAD_LETTER_TABLE), nil without one;
	// dltSource maps its columns to deadLetterNames.
	dlt       *core.LoadTarget
	dltSource []int
	// refs are the catalog objects the run was built from (see
	// OpenKafkaPipe).
	refs []catalog.Ref
}

// compileKafka checks a Kafka pipe's COPY against its target table.
func (e *Consumer) compileKafka(ctx context.Context, name string, cp *sqlast.CopyIntoTable) (*KafkaPipeRun, error) {
	sel, fc, err := KafkaQuery(cp.Query)
	if err != nil {
		return nil, fmt.Errorf("pipe %s: %w", name, err)
	}
	rk, err := ParseReadKafka(fc)
	if err != nil {
		return nil, fmt.Errorf("pipe %s: %w", name, err)
	}
	prog, err := recordeval.Compile(sel, rk.KeyFormat, rk.ValueFormat)
	if err != nil {
		return nil, fmt.Errorf("pipe %s: %w", name, err)
	}
	schema, table, tspec, err := e.Table(ctx, cp.Table)
	if err != nil {
		return nil, fmt.Errorf("pipe %s: %w", name, err)
	}
	cols, err := e.LoadColumns(core.Display(schema, table), tspec, cp.Columns)
	if err != nil {
		return nil, err
	}
	lim := e.Cfg.Limits.WithDefaults()
	rk.Src.MaxBatchBytes, rk.Src.MaxFetchMemory = lim.MaxKafkaBatchBytes, lim.MaxKafkaFetchMemory
	run := &KafkaPipeRun{e: e, Name: name, rk: rk, prog: prog, target: core.TableTarget(schema, table, tspec, cols), keepReplaced: changes.KeepsReplaced(tspec), stageKey: changes.StageKey(tspec)}
	src := make([]rowio.Column, len(prog.Columns))
	for i, c := range prog.Columns {
		src[i] = rowio.Column{Name: c}
	}
	if len(src) != len(run.target.Cols) {
		matched := 0
		for _, c := range src {
			for _, t := range run.target.Cols {
				if strings.EqualFold(c.Name, t.Name) {
					matched++
					break
				}
			}
		}
		if matched != len(src) {
			names := make([]string, len(run.target.Cols))
			for i, t := range run.target.Cols {
				names[i] = t.Name
			}
			return nil, fmt.Errorf("pipe %s: the SELECT yields %d columns (%s) and %s has %d (%s): name every SELECT column AS a column of the table, or select as many columns as it has, in its order",
				name, len(src), strings.Join(prog.Columns, ", "), run.target.Display, len(names), strings.Join(names, ", "))
		}
	}
	if run.source, err = fileread.MapColumns("the SELECT list", src, run.target, true); err != nil {
		return nil, fmt.Errorf("pipe %s: %w", name, err)
	}
	run.typed = typedColumns(prog, run.source, run.target.Cols)
	return run, nil
}

// typedColumns says which columns of the SELECT list go to the Inserter as
// values rather than text: those whose type always is one the columns they
// feed take as it is (a TIMESTAMP into a DateTime, a BIGINT into any
// integer or float column). Writing a value out and parsing it again was a
// fifth of a Kafka pipe's CPU.
func typedColumns(prog *recordeval.Program, source []int, targets []rowio.Column) []bool {
	typed := make([]bool, len(prog.Columns))
	used := make([]bool, len(prog.Columns))
	for j, i := range source {
		if i < 0 || i >= len(typed) {
			continue
		}
		ok := TypedFits(prog.Typed(i), targets[j].Type)
		typed[i] = ok && (typed[i] || !used[i])
		used[i] = true
	}
	return typed
}

func TypedFits(typed, chType string) bool {
	base, _ := schemas.BaseOf(chType)
	isInt := strings.HasPrefix(base, "Int") || strings.HasPrefix(base, "UInt")
	isFloat := base == "Float32" || base == "Float64"
	switch typed {
	case "BIGINT":
		return isInt || isFloat
	case "DOUBLE":
		return isFloat
	case "TIMESTAMP", "DATE":
		return base == "Date" || strings.HasPrefix(base, "DateTime")
	}
	return false
}

// CreateKafkaPipe is CREATE PIPE … AS COPY INTO t FROM (SELECT … FROM READ_KAFKA(…)).
func (e *Consumer) CreateKafkaPipe(ctx context.Context, s *sqlast.CreatePipe, orch core.Orchestrator) (*core.Result, error) {
	cp := s.Copy
	if cp.Overwrite {
		return nil, fmt.Errorf("pipe %s: COPY OVERWRITE cannot run continuously; use COPY INTO", s.Name)
	}
	run, err := e.compileKafka(ctx, s.Name, cp)
	if err != nil {
		return nil, err
	}
	pr := core.Props(s.Props)
	if m := pr["ingest_mode"]; m != "" {
		return nil, fmt.Errorf("pipe %s: INGEST_MODE is for volume pipes; a Kafka pipe reads every BATCH_INTERVAL_IN_SECONDS", s.Name)
	}
	if pr["batch_interval_in_seconds"] == "" {
		pr["batch_interval_in_seconds"] = "60"
	}
	if pr["virtual_cluster"] == "" {
		pr["virtual_cluster"] = "DEFAULT"
	}
	if _, _, err := e.deadLetterTarget(ctx, s.Name, pr["dead_letter_table"]); err != nil {
		return nil, err
	}
	// One pipe per group: two pipes committing to one group would each
	// show the other's position as theirs.
	all, err := e.Cat.ListAll(ctx, catalog.KindPipe)
	if err != nil {
		return nil, err
	}
	for _, o := range all {
		var other catalog.PipeSpec
		if o.Decode(&other) == nil && other.Kind == jobs.KindKafka && other.KafkaGroup == run.rk.Src.Group {
			return nil, fmt.Errorf("pipe %s: group_id %q is already used by pipe %s.%s; every Kafka pipe needs a group_id of its own", s.Name, run.rk.Src.Group, o.Schema, o.Name)
		}
	}
	// SHOW PIPES and DESC PIPE show the statement redacted; when that hid
	// something, the statement itself is kept as the object's secret and
	// OpenKafkaPipe runs it.
	shown, secret := core.Redact(cp), ""
	if shown != cp.Text {
		secret = cp.Text
	}
	spec := catalog.PipeSpec{
		Kind: jobs.KindKafka, Properties: pr, CopyStatement: shown,
		Input: run.rk.Src.Topic, Output: run.target.Display, CreatedAt: time.Now().UTC(),
		KafkaGroup: run.rk.Src.Group, KafkaBootstrap: strings.Join(run.rk.Src.Bootstrap, ","),
	}
	spec.Output = e.Cfg.Workspace + "." + run.target.Display
	if s.Comment != nil {
		spec.Comment = *s.Comment
	}
	if err := e.Cat.Put(ctx, catalog.KindPipe, e.Cfg.Schema, s.Name, spec, secret); err != nil {
		return nil, err
	}
	id := e.PipeWorkflowID(s.Name)
	if err := orch.Start(ctx, id, jobs.PipeWorkflowFor(spec.Kind), jobs.PipeInput{Params: e.ParamsOf(s.Name, spec)}, e.PipeVisibility(spec, core.Redact(s))); err != nil {
		_ = e.Cat.Delete(ctx, catalog.KindPipe, e.Cfg.Schema, s.Name)
		return nil, fmt.Errorf("pipe %s: start its workflow: %w", s.Name, err)
	}
	return core.Message("pipe %s created; it reads topic %s every %s s as Temporal workflow %s", s.Name, run.rk.Src.Topic, pr["batch_interval_in_seconds"], id), nil
}

// OpenKafkaPipe loads a Kafka pipe for its activities, kept between its
// turns while the catalog objects it was built from (the pipe, its table
// and dead-letter table) do not change (runcache): a turn costs a version
// check, not four catalog reads and a compile. The run is shared: use
// WithWarn for a run of one's own. A missing pipe is ErrPipeGone.
func (e *Consumer) OpenKafkaPipe(ctx context.Context, p jobs.PipeParams) (*KafkaPipeRun, error) {
	return e.KafkaRuns.Open(ctx, e.Cat, runcache.Key(p), func(ctx context.Context) (*KafkaPipeRun, error) { return e.openKafkaPipe(ctx, p) })
}

// Refs are the catalog objects the run was built from (runcache.Run).
func (r *KafkaPipeRun) Refs() []catalog.Ref { return r.refs }

// WithWarn returns a copy of the run that reports to warn.
func (r *KafkaPipeRun) WithWarn(warn func(msg string)) *KafkaPipeRun {
	cp := *r
	cp.Warn = warn
	return &cp
}

// openKafkaPipe builds a KafkaPipeRun from the catalog.
func (e *Consumer) openKafkaPipe(ctx context.Context, p jobs.PipeParams) (*KafkaPipeRun, error) {
	e = e.WithSchema(p.Schema)
	spec, err := e.ActivePipe(ctx, p)
	if err != nil {
		return nil, err
	}
	text := spec.CopyStatement
	if sec, err := e.Cat.Secret(ctx, catalog.KindPipe, p.Schema, p.Name); err != nil {
		return nil, err
	} else if sec != "" {
		text = sec
	}
	stmt, err := sqlparse.Parse(text)
	if err != nil {
		return nil, fmt.Errorf("pipe %s: its COPY statement no longer parses: %w", p.Name, err)
	}
	cp, ok := stmt.(*sqlast.CopyIntoTable)
	if !ok || cp.Query == nil {
		return nil, fmt.Errorf("pipe %s: not a Kafka pipe", p.Name)
	}
	run, err := e.compileKafka(ctx, p.Name, cp)
	if err != nil {
		return nil, err
	}
	run.Spec = spec
	if run.dlt, run.dltSource, err = e.deadLetterTarget(ctx, p.Name, spec.Properties["dead_letter_table"]); err != nil {
		return nil, err
	}
	run.target.Owner = core.PipeOwner(p.Schema, p.Name, spec.CreatedAt.UnixNano())
	if run.dlt != nil {
		run.dlt.Owner = run.target.Owner
	}
	run.refs = []catalog.Ref{
		{Kind: catalog.KindPipe, Schema: p.Schema, Name: p.Name},
		{Kind: catalog.KindTable, Schema: run.target.DB, Name: run.target.Table},
	}
	if run.dlt != nil {
		run.refs = append(run.refs, catalog.Ref{Kind: catalog.KindTable, Schema: run.dlt.DB, Name: run.dlt.Table})
	}
	return run, nil
}

// InitialOffsets says where the pipe starts (see kafka.Client.InitialOffsets).
func (r *KafkaPipeRun) InitialOffsets(ctx context.Context) ([]jobs.PartitionOffset, error) {
	cl, err := kafka.Open(r.rk.Src)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	off, err := cl.InitialOffsets(ctx)
	if err != nil {
		return nil, fmt.Errorf("pipe %s: %w", r.Name, err)
	}
	return toPartitionOffsets(off), nil
}

// ResetOffsets says where RESET_KAFKA_GROUP_OFFSETS = to moves the pipe
// (see kafka.Client.ResetOffsets) and commits that position to the group,
// so that the group's tools show it at once.
func (r *KafkaPipeRun) ResetOffsets(ctx context.Context, to string) ([]jobs.PartitionOffset, error) {
	cl, err := kafka.Open(r.rk.Src)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	off, err := cl.ResetOffsets(ctx, to)
	if err != nil {
		return nil, fmt.Errorf("pipe %s: %w", r.Name, err)
	}
	_ = cl.CommitGroup(ctx, off) // for monitoring only
	return toPartitionOffsets(off), nil
}

// EndOffsets says where the topic's partitions end now (the last stable
// offsets with read_committed): where the next batch stops. It reads them
// with the cluster's shared client (kafka.Pool.EndOffsets), not the
// pipe's: an idle pipe's waits then keep no client of their own open.
func (r *KafkaPipeRun) EndOffsets(ctx context.Context) ([]jobs.PartitionOffset, error) {
	end, err := r.e.Kafka.EndOffsets(ctx, r.rk.Src)
	if err != nil {
		return nil, fmt.Errorf("pipe %s: %w", r.Name, err)
	}
	return toPartitionOffsets(end), nil
}

func toPartitionOffsets(o kafka.Offsets) []jobs.PartitionOffset {
	out := make([]jobs.PartitionOffset, 0, len(o))
	for _, p := range o.Sorted() {
		out = append(out, jobs.PartitionOffset{Partition: p, Offset: o[p]})
	}
	return out
}

// commitID names one batch: the pipe, its offset epoch and the offsets
// the batch starts from. A retried batch starts from the same offsets in
// the same epoch, so it finds (and removes) the rows of an attempt that
// did not finish; records loaded again after a reset back are another
// epoch's, so they are new loads.
func (r *KafkaPipeRun) commitID(in jobs.KafkaBatchInput) uint64 {
	return core.KafkaCommit(r.e.Cfg.Workspace, r.e.Cfg.Schema, r.Name, r.Spec.CreatedAt.UnixNano(), in.Epoch, in.Offsets)
}

// badRecord is a record that could not be loaded.
type badRecord struct {
	partition int32
	offset    int64
	msg       string
}

// stageRecords is the batch size past which a batch is staged: one
// evaluator chunk, which one Inserter block holds unless its values pass
// 16 MiB.
const stageRecords = 8192

// LoadBatch loads the records after in.Offsets exactly once:
//
//  1. the batch's rows are tagged with a commit id derived from the offsets
//     it starts from (and the pipe's offset epoch);
//  2. a batch the pipe's position (position.go) shows committed already,
//     or behind it, is not loaded: its answer is the position's;
//  3. rows an attempt that did not commit left under the commit id are
//     deleted (when the position shows the batch started, or it is
//     retried), and the position records that the batch started;
//  4. records are read up to the end offsets fixed for the batch (at most
//     max.poll.records), evaluated, and inserted;
//  5. the position is recorded (the commit point in ClickHouse), then the
//     commit is registered in the table's change log;
//  6. the new offsets are returned: Temporal recording the result moves
//     the workflow past the batch; the consumer group gets them too, for
//     monitoring.
//
// When the batch has more bad records than max_errors still allows, none
// of it is kept and the result says to pause.
func (r *KafkaPipeRun) LoadBatch(ctx context.Context, in jobs.KafkaBatchInput, retried bool) (_ jobs.KafkaBatchResult, err error) {
	res := jobs.KafkaBatchResult{Offsets: in.Offsets}
	// The pipe's client from its last batch, unless this is a retry: a
	// batch that failed starts over on fresh connections.
	var cl *kafka.Client
	if retried {
		cl, err = kafka.Open(r.rk.Src)
	} else {
		cl, err = r.e.Kafka.Get(r.rk.Src)
	}
	if err != nil {
		return res, err
	}
	defer func() { r.e.Kafka.Put(cl, err != nil) }()
	// The batch's end: fixed in its input (the same for every attempt), or
	// read now (workflows recorded before that).
	end := kafka.Offsets{}
	for _, o := range in.End {
		end[o.Partition] = o.Offset
	}
	if len(in.End) == 0 {
		if end, err = cl.EndOffsets(ctx); err != nil {
			return res, fmt.Errorf("pipe %s: %w", r.Name, err)
		}
	}
	from := kafka.Offsets{}
	for _, o := range in.Offsets {
		from[o.Partition] = o.Offset
	}
	// Partitions added to the topic since the pipe started are read from
	// their beginning.
	var added []int32
	for p := range end {
		if _, ok := from[p]; !ok {
			added = append(added, p)
		}
	}
	if len(added) > 0 {
		start, err := cl.StartOffsets(ctx)
		if err != nil {
			return res, fmt.Errorf("pipe %s: %w", r.Name, err)
		}
		for _, p := range added {
			from[p] = start[p]
		}
	}
	commit := r.commitID(in)
	target := r.target
	target.Commit = commit
	pending := int64(0)
	for p, e := range end {
		if e > from[p] {
			pending += e - from[p]
		}
	}
	if pending == 0 {
		res.Offsets = toPartitionOffsets(from)
		return res, nil
	}
	// A batch the pipe committed before is not loaded again (position.go).
	pos, err := r.readPosition(ctx, in.Epoch)
	if err != nil {
		return res, err
	}
	if pos != nil && pos.committed && pos.commit == commit {
		// This batch committed; the answer of its attempt was lost.
		return r.settle(ctx, pos, pos.result)
	}
	if pos != nil && behind(in.Offsets, pos.at()) {
		// The pipe went past it: its workflow was reset to before it.
		if r.Warn != nil {
			r.Warn(fmt.Sprintf("the batch from offsets %v was loaded before (the pipe's workflow was reset?): the pipe goes on from %v, where its batches ended", in.Offsets, pos.at()))
		}
		return r.settle(ctx, pos, jobs.KafkaBatchResult{Offsets: pos.at(), More: true})
	}
	// Rows an attempt that did not commit left: this batch's earlier
	// attempt, or, when the workflow was reset, the attempt of the run
	// before the reset (whose retry never comes). Only a batch started
	// and not committed, or retried, can have left any.
	if retried || pos != nil && !pos.committed {
		var legacy []uint64
		if retried && in.Epoch == 0 {
			// The id of releases before 2026-12-04 too: a batch retried
			// across an upgrade (before any reset: those are epoch 0).
			legacy = append(legacy, core.LegacyKafkaCommit(r.e.Cfg.Workspace, r.e.Cfg.Schema, r.Name, r.Spec.CreatedAt.UnixNano(), in.Offsets))
		}
		if err := r.e.DropCommits(ctx, target, []uint64{commit}, legacy...); err != nil {
			return res, fmt.Errorf("pipe %s: %w", r.Name, err)
		}
		if r.dlt != nil {
			dlt := *r.dlt
			dlt.Commit = commit
			if err := r.e.DropCommit(ctx, dlt, commit); err != nil {
				return res, fmt.Errorf("pipe %s: %w", r.Name, err)
			}
		}
	}
	if pos == nil || pos.committed || pos.commit != commit {
		if err := r.writePosition(ctx, in.Epoch, commit, in.Offsets, nil); err != nil {
			return res, err
		}
	}

	limit := cl.MaxPollRecords()
	if n, err := strconv.Atoi(r.Spec.Properties["batch_size_per_kafka_partition"]); err == nil && n > 0 {
		limit = n * len(end)
	}
	budget := r.rk.MaxErrors - in.Rejected
	// A batch that can span several blocks is staged, so that its rows
	// show only if it is kept (package staging); a smaller one is one
	// block, unless its values pass the Inserter's 16 MiB per block.
	var stg *staging.Stage
	// A table that keeps replaced rows takes every batch through staging
	// (changes.PublishStaged).
	if pending > stageRecords || r.keepReplaced {
		if stg, err = staging.New(ctx, r.e.St, target, r.stageKey); err != nil {
			return res, fmt.Errorf("pipe %s: %w", r.Name, err)
		}
		defer stg.Drop(ctx)
	}
	// Opened before any row can show; TrackLoad closes them.
	if err := r.e.OpenLoads(ctx, target, []uint64{commit}); err != nil {
		return res, fmt.Errorf("pipe %s: %w", r.Name, err)
	}
	if r.dlt != nil {
		if err := r.e.OpenLoads(ctx, *r.dlt, []uint64{commit}); err != nil {
			return res, fmt.Errorf("pipe %s: %w", r.Name, err)
		}
	}
	into := stg.Into(target)
	ins, err := r.e.St.NewInserter(ctx, into.DB, into.Table, target.Cols, core.CommitColumn, commit)
	if err != nil {
		return res, fmt.Errorf("pipe %s: %w", r.Name, err)
	}
	defer ins.Abort()
	ins.Expect(min(pending, int64(limit))) // its columns are made whole at once
	// With a dead-letter table, bad records go there, under the batch's
	// commit id, and do not count against max_errors.
	dead, err := r.openDeadLetters(ctx, commit)
	if err != nil {
		return res, err
	}
	defer dead.abort()
	if dead != nil {
		budget = math.MaxInt64
	}
	// Three stages overlap: the fetch callback gathers records into
	// chunks, evaluators (one per core) turn chunks into batches of text
	// cells, and a converter turns batches into ClickHouse columns (the
	// Inserter's sender writes them meanwhile). Rows reach the table in no
	// particular order; the batch is one commit either way.
	const batchRows = 8192
	type evalBatch struct {
		b     *rowio.Batch
		where [][2]int64    // partition, offset of each row
		recs  []*kgo.Record // each row's record, for the dead-letter table
	}
	evaluators := min(runtime.GOMAXPROCS(0), 8)
	free := make(chan *evalBatch, evaluators+2)
	for i := 0; i < cap(free); i++ {
		free <- &evalBatch{b: r.prog.NewBatch(batchRows, r.typed), where: make([][2]int64, 0, batchRows)}
	}
	full := make(chan *evalBatch, 2)
	var mu sync.Mutex // guards bad
	var bad []badRecord
	addBad := func(b badRecord) {
		mu.Lock()
		bad = append(bad, b)
		mu.Unlock()
	}
	over := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return int64(len(bad)) > budget
	}
	convDone := make(chan error, 1)
	go func() {
		var err error
		for eb := range full {
			if err == nil {
				var errs []chstore.RowError
				if errs, err = ins.Add(eb.b, r.source); err == nil {
					for _, e := range errs {
						if i := int(e.Line) - 1; i >= 0 && i < len(eb.where) {
							addBad(badRecord{partition: int32(eb.where[i][0]), offset: eb.where[i][1], msg: e.Msg})
							if dead != nil && i < len(eb.recs) {
								dead.add(eb.recs[i], e.Msg)
							}
						}
					}
				}
			}
			recordeval.ResetBatch(eb.b)
			eb.where = eb.where[:0]
			clear(eb.recs)
			eb.recs = eb.recs[:0]
			free <- eb
		}
		convDone <- err
	}()
	chunks := make(chan []*kgo.Record, evaluators)
	var filtered atomic.Int64
	var evals sync.WaitGroup
	for i := 0; i < evaluators; i++ {
		evals.Go(func() {
			var rec recordeval.Record
			ev := r.prog.Evaluator()
			for chunk := range chunks {
				if over() {
					continue // the batch is lost anyway: drain
				}
				eb := <-free
				for _, kr := range chunk {
					rec = recordeval.Record{Key: kr.Key, Value: kr.Value, Topic: kr.Topic, Partition: kr.Partition, Offset: kr.Offset, Timestamp: kr.Timestamp, Headers: rec.Headers[:0]}
					for _, h := range kr.Headers {
						rec.Headers = append(rec.Headers, recordeval.Header{Key: h.Key, Value: h.Value})
					}
					kept, err := ev.Append(eb.b, &rec)
					if err != nil {
						addBad(badRecord{partition: kr.Partition, offset: kr.Offset, msg: err.Error()})
						if dead != nil {
							dead.add(kr, err.Error())
						}
						continue
					}
					if !kept {
						filtered.Add(1)
						continue
					}
					// Line numbers the rows of this batch, so that a
					// conversion error names its record.
					eb.b.Line[eb.b.Rows-1] = int64(len(eb.where) + 1)
					eb.where = append(eb.where, [2]int64{int64(kr.Partition), kr.Offset})
					if dead != nil {
						eb.recs = append(eb.recs, kr)
					}
				}
				full <- eb
			}
		})
	}
	errStop := fmt.Errorf("stop")
	chunk := make([]*kgo.Record, 0, batchRows)
	next, err := cl.Read(ctx, from, end, limit, func(kr *kgo.Record) error {
		res.Records++
		chunk = append(chunk, kr)
		if len(chunk) == batchRows {
			progress.Add(ctx, batchRows) // the activity's heartbeats show it
			chunks <- chunk
			chunk = make([]*kgo.Record, 0, batchRows)
			if over() {
				return errStop
			}
		}
		return nil
	})
	res.Read = cl.Began()
	if len(chunk) > 0 && err == nil {
		progress.Add(ctx, int64(len(chunk)))
		chunks <- chunk
	}
	close(chunks)
	evals.Wait()
	close(full)
	if cerr := <-convDone; err == nil {
		err = cerr
	}
	res.Filtered = filtered.Load()
	// Evaluators finish in any order: the bad records are put back in the
	// topic's order, so that what is reported does not depend on timing.
	slices.SortFunc(bad, func(a, b badRecord) int {
		if c := cmp.Compare(a.partition, b.partition); c != 0 {
			return c
		}
		return cmp.Compare(a.offset, b.offset)
	})
	// pause gives the batch up and pauses the pipe: the data is at fault,
	// and reading it again would fail the same way.
	pause := func(reason string) (jobs.KafkaBatchResult, error) {
		ins.Abort()
		dead.abort()
		// Blocks already sent are taken back: the batch is all or nothing.
		if stg == nil {
			if err := r.e.DropCommit(ctx, target, commit); err != nil {
				return jobs.KafkaBatchResult{Offsets: in.Offsets}, fmt.Errorf("pipe %s: %w", r.Name, err)
			}
		}
		if err := r.e.AbandonLoads(ctx, target, []uint64{commit}); err != nil {
			return jobs.KafkaBatchResult{Offsets: in.Offsets}, fmt.Errorf("pipe %s: %w", r.Name, err)
		}
		if r.dlt != nil {
			if err := r.e.DropCommit(ctx, *r.dlt, commit); err != nil {
				return jobs.KafkaBatchResult{Offsets: in.Offsets}, fmt.Errorf("pipe %s: %w", r.Name, err)
			}
			if err := r.e.AbandonLoads(ctx, *r.dlt, []uint64{commit}); err != nil {
				return jobs.KafkaBatchResult{Offsets: in.Offsets}, fmt.Errorf("pipe %s: %w", r.Name, err)
			}
		}
		// The group keeps the position before the batch, so that a pipe
		// re-created on it goes on from there.
		_ = cl.CommitGroup(ctx, from)
		return jobs.KafkaBatchResult{Offsets: in.Offsets, Records: res.Records, Paused: true, Reason: reason, Read: res.Read}, nil
	}
	if big, ok := errors.AsType[*kafka.BatchTooLargeError](err); ok {
		setting, holds := "LAKEPIPE_MAX_KAFKA_BATCH_BYTES", "that much per partition it reads"
		if big.Fetch {
			setting, holds = "LAKEPIPE_MAX_KAFKA_FETCH_MEMORY", "twice that per pipe it runs"
		}
		return pause(fmt.Sprintf("%v; the pipe paused without loading this batch. Fix the producer and ALTER PIPE %s SET RESET_KAFKA_GROUP_OFFSETS = '<epoch millis>' to a time after the batch, then resume it; or raise %s on the workers (each may then hold %s) and resume it",
			big, r.Name, setting, holds))
	}
	if err != nil && err != errStop {
		return jobs.KafkaBatchResult{Offsets: in.Offsets}, fmt.Errorf("pipe %s: %w", r.Name, err)
	}
	if over() {
		f := bad[min(int(max(budget, 0)), len(bad)-1)] // the one over the limit
		return pause(fmt.Sprintf("topic %s partition %d offset %d: %s; the pipe tolerates max_errors = %d bad records and has met %d: it paused without loading this batch. Fix the producer; or ALTER PIPE %s SET DEAD_LETTER_TABLE = 'bad_records' and resume it (the bad records go to that table and the rest loads); or DROP PIPE %s and CREATE it again with a higher max_errors (it goes on from group %s's offsets)",
			r.rk.Src.Topic, f.partition, f.offset, f.msg, r.rk.MaxErrors, in.Rejected+int64(len(bad)), r.Name, r.Name, r.rk.Src.Group))
	}
	rows, err := ins.Close()
	if err == nil {
		err = r.e.PublishStaged(ctx, stg, target)
	}
	if err != nil {
		return jobs.KafkaBatchResult{Offsets: in.Offsets}, fmt.Errorf("pipe %s: %w", r.Name, err)
	}
	res.Rows = rows
	if dead != nil {
		n, err := dead.close()
		if err != nil {
			return jobs.KafkaBatchResult{Offsets: in.Offsets}, fmt.Errorf("pipe %s: %w", r.Name, err)
		}
		res.DeadLettered = n
	} else {
		res.Rejected = int64(len(bad))
	}
	if len(bad) > 0 {
		f := bad[0]
		res.FirstError = fmt.Sprintf("topic %s partition %d offset %d: %s", r.rk.Src.Topic, f.partition, f.offset, f.msg)
		if dead != nil {
			res.FirstError += fmt.Sprintf(" (%d bad records of this batch are in dead-letter table %s)", len(bad), r.dlt.Display)
		}
	}
	for p, e := range end {
		if e > next[p] {
			res.Lag += e - next[p]
		}
	}
	res.More = res.Records >= int64(limit) && res.Lag > 0
	res.Offsets = toPartitionOffsets(next)
	// The commit point, then the registration (a retry that finds the
	// first registers what the second did not).
	res.FirstError = errtext.Cap(res.FirstError, errtext.MaxMessage)
	if err := r.writePosition(ctx, in.Epoch, commit, in.Offsets, &res); err != nil {
		return jobs.KafkaBatchResult{Offsets: in.Offsets}, err
	}
	if err := r.e.TrackLoad(ctx, target.DB, target.Table, commit, rows); err != nil {
		return jobs.KafkaBatchResult{Offsets: in.Offsets}, fmt.Errorf("pipe %s: %w", r.Name, err)
	}
	if dead != nil {
		if err := r.e.TrackLoad(ctx, r.dlt.DB, r.dlt.Table, commit, res.DeadLettered); err != nil { // closes it, rows or not
			return jobs.KafkaBatchResult{Offsets: in.Offsets}, fmt.Errorf("pipe %s: %w", r.Name, err)
		}
	}
	if err := cl.CommitGroup(ctx, next); err != nil {
		// Only monitoring depends on it; the next batch commits again.
		if r.Warn != nil {
			r.Warn(err.Error())
		}
	}
	if res.More {
		// The next batch follows at once: it ends where the topic ends
		// now. A failed read only costs the next turn a KafkaEnd.
		if ends, err := cl.EndOffsets(ctx); err == nil {
			res.NextEnd = toPartitionOffsets(ends)
		}
	}
	return res, nil
}

// KafkaLag is what DESC PIPE shows of a Kafka pipe's position: per
// partition its offset, the end of the partition and the lag.
func (e *Consumer) KafkaLag(ctx context.Context, name string, offsets []jobs.PartitionOffset) (string, int64, error) {
	run, err := e.OpenKafkaPipe(ctx, e.ParamsOf(name, catalog.PipeSpec{Kind: jobs.KindKafka}))
	if err != nil {
		return "", 0, err
	}
	cl, err := kafka.Open(run.rk.Src)
	if err != nil {
		return "", 0, err
	}
	defer cl.Close()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	end, err := cl.EndOffsets(cctx)
	if err != nil {
		return "", 0, err
	}
	at := map[int32]int64{}
	for _, o := range offsets {
		at[o.Partition] = o.Offset
	}
	var parts []string
	var total int64
	for _, p := range end.Sorted() {
		lag := end[p] - at[p]
		if lag < 0 {
			lag = 0
		}
		total += lag
		parts = append(parts, fmt.Sprintf("%d: offset %d, end %d, lag %d", p, at[p], end[p], lag))
	}
	return strings.Join(parts, "; "), total, nil
}
