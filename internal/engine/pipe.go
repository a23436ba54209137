package engine

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/errtext"
	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/internal/kafkaload"
	"github.com/lakepipe/lakepipe/internal/objstore"
	"github.com/lakepipe/lakepipe/internal/sqlast"
	"github.com/lakepipe/lakepipe/internal/sqlparse"
)

// WithOrchestrator returns a copy of the engine that runs pipes through o.
func (e *Engine) WithOrchestrator(o core.Orchestrator) *Engine {
	cp := *e
	cp.Orch = o
	cp.wire()
	return &cp
}

// WithSchema returns a copy of the engine whose unqualified names live in
// schema (activities run for pipes of any schema).
func (e *Engine) WithSchema(schema string) *Engine {
	cp := *e
	cp.Cfg.Schema = schema
	cp.wire()
	return &cp
}

// PipeParams returns the parameters the workflow of a pipe of this schema
// runs with (ErrPipeGone when there is no such pipe).
func (e *Engine) PipeParams(ctx context.Context, name string) (jobs.PipeParams, error) {
	var spec catalog.PipeSpec
	ok, err := e.Cat.Get(ctx, catalog.KindPipe, e.Cfg.Schema, name, &spec)
	if err != nil {
		return jobs.PipeParams{}, err
	}
	if !ok {
		return jobs.PipeParams{}, fmt.Errorf("pipe %s.%s: %w", e.Cfg.Schema, name, core.ErrPipeGone)
	}
	return e.ParamsOf(name, spec), nil
}

func (e *Engine) createPipe(ctx context.Context, s *sqlast.CreatePipe) (*core.Result, error) {
	if err := Check(e.Cfg.Schema, s); err != nil {
		return nil, err
	}
	orch, err := e.Orchestrator()
	if err != nil {
		return nil, err
	}
	var existing catalog.PipeSpec
	ok, err := e.Cat.Get(ctx, catalog.KindPipe, e.Cfg.Schema, s.Name, &existing)
	if err != nil {
		return nil, err
	}
	if ok {
		if s.IfNotExists {
			return core.Message("pipe %s already exists", s.Name), nil
		}
		return nil, fmt.Errorf("pipe %s already exists (use IF NOT EXISTS, or DROP PIPE first)", s.Name)
	}
	cp := s.Copy
	if cp.Volume == nil {
		if err := e.ensureDeadLetterTable(ctx, core.Props(s.Props)["dead_letter_table"]); err != nil {
			return nil, fmt.Errorf("pipe %s: %w", s.Name, err)
		}
		return e.CreateKafkaPipe(ctx, s, orch)
	}
	schema, table, _, err := e.Table(ctx, cp.Table)
	if err != nil {
		return nil, fmt.Errorf("pipe %s: %w", s.Name, err)
	}
	if cp.Overwrite {
		return nil, fmt.Errorf("pipe %s: COPY OVERWRITE cannot run continuously; use COPY INTO", s.Name)
	}
	_, vspec, err := e.Volume(ctx, cp.Volume.Volume)
	if err != nil {
		return nil, fmt.Errorf("pipe %s: %w", s.Name, err)
	}
	loc, err := objstore.ParseLocation(vspec.Location)
	if err != nil {
		return nil, err
	}
	if loc.IsBucketRoot() {
		return nil, fmt.Errorf("pipe %s: volume %s points at the bucket root (%s); a pipe's volume must point at a sub-directory, e.g. %sincoming/ (create a volume on a sub-directory and use that)", s.Name, cp.Volume.Volume, loc, loc)
	}
	pipes, err := e.Cat.List(ctx, catalog.KindPipe, e.Cfg.Schema)
	if err != nil {
		return nil, err
	}
	for _, o := range pipes {
		var other catalog.PipeSpec
		if o.Decode(&other) == nil && other.Kind == jobs.KindVolume && other.Input == cp.Volume.Volume {
			return nil, fmt.Errorf("pipe %s: volume %s is already used by pipe %s; each pipe needs a volume of its own", s.Name, cp.Volume.Volume, o.Name)
		}
	}
	pr := core.Props(s.Props)
	if pr["ingest_mode"] == "" {
		pr["ingest_mode"] = "LIST_PURGE"
	}
	pr["ingest_mode"] = strings.ToUpper(pr["ingest_mode"])
	if pr["virtual_cluster"] == "" {
		pr["virtual_cluster"] = "DEFAULT"
	}
	if pr["ingest_mode"] != "LIST_PURGE" && cp.Purge {
		return nil, fmt.Errorf("pipe %s: INGEST_MODE = '%s' keeps the source files, but the COPY says PURGE = TRUE: drop PURGE or use INGEST_MODE = 'LIST_PURGE'", s.Name, pr["ingest_mode"])
	}
	spec := catalog.PipeSpec{
		Kind: jobs.KindVolume, Properties: pr, CopyStatement: cp.Text, Input: cp.Volume.Volume,
		Output: e.Cfg.Workspace + "." + schema + "." + table, CreatedAt: time.Now().UTC(),
	}
	if s.Comment != nil {
		spec.Comment = *s.Comment
	}
	if err := e.Cat.Put(ctx, catalog.KindPipe, e.Cfg.Schema, s.Name, spec, ""); err != nil {
		return nil, err
	}
	id := e.PipeWorkflowID(s.Name)
	if err := orch.Start(ctx, id, jobs.PipeWorkflowFor(spec.Kind), jobs.PipeInput{Params: e.ParamsOf(s.Name, spec)}, e.PipeVisibility(spec, core.Redact(s))); err != nil {
		_ = e.Cat.Delete(ctx, catalog.KindPipe, e.Cfg.Schema, s.Name)
		return nil, fmt.Errorf("pipe %s: start its workflow: %w", s.Name, err)
	}
	return core.Message("pipe %s created; it runs as Temporal workflow %s", s.Name, id), nil
}

func (e *Engine) alterPipe(ctx context.Context, s *sqlast.AlterPipe) (*core.Result, error) {
	if s.Action == "SET_COPY" {
		return nil, fmt.Errorf("the COPY statement of pipe %s cannot be altered: DROP PIPE %s and CREATE PIPE again", s.Name, s.Name)
	}
	if err := Check(e.Cfg.Schema, s); err != nil {
		return nil, err
	}
	spec, err := e.PipeSpec(ctx, s.Name)
	if err != nil {
		return nil, err
	}
	orch, err := e.Orchestrator()
	if err != nil {
		return nil, err
	}
	id := e.PipeWorkflowID(s.Name)
	switch s.Action {
	case "REFRESH", "EXECUTE":
		var r jobs.ControlReply
		if err := orch.Update(ctx, id, jobs.UpdateRefresh, nil, &r); err != nil {
			return nil, fmt.Errorf("pipe %s: %w", s.Name, err)
		}
		return core.ControlMessage("pipe "+s.Name, r), nil
	case "SET":
		changed, resettle := false, false
		var settings jobs.PipeSettings
		var reply *jobs.ControlReply
		spec.Properties = maps.Clone(spec.Properties)
		if spec.Properties == nil {
			spec.Properties = map[string]string{}
		}
		for _, p := range s.Props {
			switch k := strings.ToLower(p.Key); {
			case k != "comment" && AlterablePipeProps[k]:
				if err := alterableFor(spec.Kind, k); err != nil {
					return nil, fmt.Errorf("pipe %s: %w", s.Name, err)
				}
				if k == "event_queue" && spec.Properties["ingest_mode"] != "EVENT_NOTIFICATION" {
					return nil, fmt.Errorf("pipe %s: EVENT_QUEUE goes with INGEST_MODE = 'EVENT_NOTIFICATION' (this pipe's is %s, fixed at creation)", s.Name, spec.Properties["ingest_mode"])
				}
				v := strings.TrimSpace(p.Value)
				if k == "dead_letter_table" {
					if err := e.ensureDeadLetterTable(ctx, v); err != nil {
						return nil, fmt.Errorf("pipe %s: %w", s.Name, err)
					}
				}
				if k == "ignore_tmp_file" || k == "virtual_cluster" {
					v = strings.ToUpper(v)
				}
				spec.Properties[k], changed = v, true
				resettle = resettle || k == "poll_interval_in_seconds" || k == "batch_interval_in_seconds" || k == "max_files_per_batch"
			case k == "reset_kafka_group_offsets":
				if spec.Kind != jobs.KindKafka {
					return nil, fmt.Errorf("pipe %s: RESET_KAFKA_GROUP_OFFSETS applies to Kafka pipes; this one reads a volume", s.Name)
				}
				settings.ResetOffsets, resettle = strings.ToLower(strings.TrimSpace(p.Value)), true
			case k == "pipe_execution_paused":
				paused, err := core.ParseBool("PIPE_EXECUTION_PAUSED", p.Value)
				if err != nil {
					return nil, err
				}
				upd := jobs.UpdateResume
				if paused {
					upd = jobs.UpdatePause
				}
				reply = new(jobs.ControlReply)
				if err := orch.Update(ctx, id, upd, nil, reply); err != nil {
					return nil, fmt.Errorf("pipe %s: %w", s.Name, err)
				}
			case k == "comment":
				spec.Comment, changed = p.Value, true
			}
		}
		if changed {
			// A Kafka pipe's secrets (its SASL password) are stored with the
			// pipe: the new version keeps them.
			secret, err := e.Cat.Secret(ctx, catalog.KindPipe, e.Cfg.Schema, s.Name)
			if err != nil {
				return nil, err
			}
			if err := e.Cat.Put(ctx, catalog.KindPipe, e.Cfg.Schema, s.Name, spec, secret); err != nil {
				return nil, err
			}
		}
		// The activities read the other properties from the catalog at
		// their next turn; the workflow keeps the interval and the files
		// per turn, which it takes as an update.
		if resettle {
			np := e.ParamsOf(s.Name, spec)
			settings.PollSeconds, settings.MaxFilesPerTurn = np.PollSeconds, np.MaxFilesPerTurn
			reply = new(jobs.ControlReply)
			if err := orch.Update(ctx, id, jobs.UpdateSet, settings, reply); err != nil {
				return nil, fmt.Errorf("pipe %s: its properties are saved, but its workflow did not take them: %w", s.Name, err)
			}
		}
		if reply != nil {
			return core.ControlMessage("pipe "+s.Name+" altered", *reply), nil
		}
		return core.Message("pipe %s altered", s.Name), nil
	}
	return nil, fmt.Errorf("ALTER PIPE … %s: %w", s.Action, core.ErrNotSupportedYet)
}

// ensureDeadLetterTable creates a Kafka pipe's dead-letter table when it
// is missing (name was checked by CheckDeadLetterTable: letters, digits,
// _ and one dot).
func (e *Engine) ensureDeadLetterTable(ctx context.Context, name string) error {
	if name == "" {
		return nil
	}
	stmt, err := sqlparse.Parse("CREATE TABLE IF NOT EXISTS " + name + " " + kafkaload.DeadLetterColumns)
	if err != nil {
		return fmt.Errorf("dead-letter table %s: %w", name, err)
	}
	if _, err := e.Exec(ctx, stmt); err != nil {
		return fmt.Errorf("dead-letter table %s: %w", name, err)
	}
	return nil
}

// alterableFor refuses a property that does not apply to a kind of pipe.
func alterableFor(kind jobs.PipeKind, k string) error {
	switch {
	case kind == jobs.KindKafka && (k == "max_files_per_batch" || k == "ignore_tmp_file" || k == "copy_job_hint" || k == "event_queue"):
		return fmt.Errorf("%s applies to volume pipes; this one reads Kafka", strings.ToUpper(k))
	case kind != jobs.KindKafka && (k == "batch_size_per_kafka_partition" || k == "dead_letter_table"):
		return fmt.Errorf("%s applies to Kafka pipes; this one reads a volume", strings.ToUpper(k))
	}
	return nil
}

func (e *Engine) dropPipe(ctx context.Context, s *sqlast.DropPipe) (*core.Result, error) {
	if _, err := e.PipeSpec(ctx, s.Name); err != nil {
		if s.IfExists {
			return core.Message("pipe %s does not exist", s.Name), nil
		}
		return nil, err
	}
	orch, err := e.Orchestrator()
	if err != nil {
		return nil, err
	}
	if err := e.Cat.Delete(ctx, catalog.KindPipe, e.Cfg.Schema, s.Name); err != nil {
		return nil, err
	}
	if err := orch.Stop(ctx, e.PipeWorkflowID(s.Name)); err != nil {
		return nil, fmt.Errorf("pipe %s dropped, but its workflow did not stop: %w", s.Name, err)
	}
	return core.Message("pipe %s dropped (the data it loaded stays in its table)", s.Name), nil
}

// pipeView is a pipe's catalog entry joined with its workflow's status.
type pipeView struct {
	name    string
	spec    catalog.PipeSpec
	st      *jobs.PipeStatus
	status  string // RUNNING, PAUSED, FAILED
	invalid string
}

func (e *Engine) viewPipe(ctx context.Context, name string, spec catalog.PipeSpec) pipeView {
	v := pipeView{name: name, spec: spec, status: "RUNNING"}
	if e.Orch == nil {
		v.status, v.invalid = "UNKNOWN", "no Temporal connection"
		return v
	}
	st, state, reason, err := e.Orch.PipeStatus(ctx, e.PipeWorkflowID(name))
	switch {
	case err != nil && state == "RUNNING":
		// Running, but no worker answered the query in time: say so, the
		// pipe itself is fine.
		v.invalid = err.Error()
	case err != nil:
		v.status, v.invalid = "FAILED", err.Error()
	case state != "RUNNING":
		v.status, v.invalid = "FAILED", strings.TrimSpace("workflow "+strings.ToLower(state)+" "+reason)
	case st != nil && st.Paused:
		v.status = "PAUSED"
	}
	v.st = st
	if v.invalid == "" && st != nil && st.Kafka != nil {
		v.invalid = st.Kafka.InvalidReason // too many bad records: paused
	}
	if v.invalid == "" && st != nil {
		v.invalid = st.InvalidReason // an error no retry fixes: paused
	}
	if v.invalid == "" {
		v.invalid = reason // an activity that keeps failing
	}
	// A bad file is not a broken pipe: its error is in load_history and in
	// DESC PIPE EXTENDED's last_error, not in invalid_reason.
	return v
}

func (v pipeView) properties() string {
	keys := make([]string, 0, len(v.spec.Properties))
	for k := range v.spec.Properties {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + v.spec.Properties[k]
	}
	return strings.Join(parts, ", ")
}

func (e *Engine) showPipes(ctx context.Context, s *sqlast.ShowPipes) (*core.Result, error) {
	objs, err := e.Cat.List(ctx, catalog.KindPipe, e.Cfg.Schema)
	if err != nil {
		return nil, err
	}
	res := &core.Result{Columns: []string{"name", "status", "pipe_kind", "vcluster", "ingest_mode", "input_name", "output_name",
		"files_loaded", "rows_loaded", "last_load_time", "comment", "copy_statement", "created_time",
		// Beyond the ClickZetta Lakehouse documentation: what waits, so that SQL users need no dashboard
		// (the worker's metrics lakepipe_pipe_backlog_files and
		// lakepipe_pipe_kafka_lag_records carry the same figures).
		"backlog_files", "kafka_lag", "last_turn_time"}}
	vis := e.Visible(ctx, jobs.VisibleVolumePipe, jobs.VisibleKafkaPipe)
	for _, o := range objs {
		if !core.LikeMatch(s.Like, o.Name) {
			continue
		}
		var spec catalog.PipeSpec
		if err := o.Decode(&spec); err != nil {
			return nil, err
		}
		var status string
		var files, rows int64
		var last, backlog, lag, turn any
		var figures *jobs.PipeFigures
		if l, ok := vis.Get(ctx, e.PipeWorkflowID(o.Name)); ok {
			// From visibility: no worker needed. last_turn_time is not
			// kept there (an idle turn writes nothing): DESC PIPE has it.
			status, figures = string(l.Status), l.Figures
			if figures == nil {
				figures = &jobs.PipeFigures{}
			}
		} else {
			v := e.viewPipe(ctx, o.Name, spec)
			status = v.status
			if v.st != nil {
				c := v.st.Counters
				figures = &jobs.PipeFigures{FilesLoaded: c.FilesLoaded, RowsLoaded: c.RowsLoaded, LastLoadTime: c.LastLoadTime, Backlog: c.Backlog}
				if !c.LastTurnTime.IsZero() {
					turn = c.LastTurnTime
				}
			}
		}
		if status == string(jobs.StatusPaused) {
			status = string(jobs.StatusSuspended) // SHOW PIPES says SUSPENDED where DESC says PAUSED, as the ClickZetta Lakehouse documentation does
		}
		if figures != nil {
			files, rows = figures.FilesLoaded, figures.RowsLoaded
			if !figures.LastLoadTime.IsZero() {
				last = figures.LastLoadTime
			}
			// The workflow keeps one figure: files beyond the last batch
			// of a volume pipe, records beyond the offsets of a Kafka one.
			if spec.Kind == jobs.KindKafka {
				lag = int64(figures.Backlog)
			} else {
				backlog = int64(figures.Backlog)
			}
		}
		kind := string(spec.Kind)
		if spec.Kind == jobs.KindKafka {
			kind = "READ_KAFKA" // SHOW PIPES names the source function, as the ClickZetta Lakehouse documentation does
		}
		res.Rows = append(res.Rows, []any{o.Name, status, kind, spec.Properties["virtual_cluster"], spec.Properties["ingest_mode"],
			spec.Input, spec.Output, files, rows, last, spec.Comment, spec.CopyStatement, spec.CreatedAt, backlog, lag, turn})
	}
	return res, nil
}

func (e *Engine) descPipe(ctx context.Context, s *sqlast.DescPipe) (*core.Result, error) {
	spec, err := e.PipeSpec(ctx, s.Name)
	if err != nil {
		return nil, err
	}
	v := e.viewPipe(ctx, s.Name, spec)
	kv := [][2]any{
		{"name", s.Name}, {"schema", e.Cfg.Schema}, {"pipe_status", v.status}, {"pipe_kind", string(spec.Kind)},
		{"properties", v.properties()}, {"ingest_mode", spec.Properties["ingest_mode"]}, {"virtual_cluster", spec.Properties["virtual_cluster"]},
		{"input_name", spec.Input}, {"output_name", spec.Output}, {"copy_statement", spec.CopyStatement},
		{"invalid_reason", v.invalid}, {"comment", spec.Comment}, {"created_time", spec.CreatedAt},
	}
	if spec.Kind == jobs.KindKafka {
		kv = append(kv, [2]any{"batch_interval_in_seconds", spec.Properties["batch_interval_in_seconds"]},
			[2]any{"kafka_bootstrap", spec.KafkaBootstrap}, [2]any{"kafka_group_id", spec.KafkaGroup})
		var offsets []jobs.PartitionOffset
		if v.st != nil && v.st.Kafka != nil {
			offsets = v.st.Kafka.Offsets
		}
		parts, lag, err := e.KafkaLag(ctx, s.Name, offsets)
		if err != nil {
			parts = "unknown: " + err.Error()
		}
		var lagv any = lag
		if err != nil {
			lagv = nil
		}
		kv = append(kv, [2]any{"kafka_partitions", parts}, [2]any{"kafka_lag", lagv})
	}
	if s.Extended {
		kv = append(kv, [2]any{"query_tag", e.PipeWorkflowID(s.Name)}, [2]any{"workflow_id", e.PipeWorkflowID(s.Name)})
		if v.st != nil {
			c := v.st.Counters
			var last any
			if !c.LastLoadTime.IsZero() {
				last = c.LastLoadTime
			}
			kv = append(kv, [2]any{"poll_interval_in_seconds", v.st.Params.PollSeconds},
				[2]any{"files_loaded", c.FilesLoaded}, [2]any{"files_failed", c.FilesFailed},
				[2]any{"rows_loaded", c.RowsLoaded}, [2]any{"rows_rejected", c.RowsRejected},
				[2]any{"last_load_time", last}, [2]any{"backlog", c.Backlog}, [2]any{"turns", c.Turns},
				[2]any{"turn_in_progress", v.st.Running}, [2]any{"last_error", c.LastError})
			if v.st.Params.Kind != jobs.KindKafka {
				kv = append(kv, [2]any{"listing", listingText(v.st.List)})
			}
		}
	}
	return core.PropertyRows(kv), nil
}

// listingText says how a volume pipe's turns list its volume.
func listingText(l jobs.ListState) string {
	full := "never yet"
	if !l.FullAt.IsZero() {
		full = l.FullAt.UTC().Format(time.DateTime)
	}
	switch {
	case l.Ordered && l.Cursor != "":
		return fmt.Sprintf("incremental: after %s (new files arrive in key order); last full listing %s", errtext.Quote(l.Cursor), full)
	case l.Ordered:
		return "incremental: from the first key (new files arrive in key order); last full listing " + full
	case !l.FullAt.IsZero() && !l.Ordered:
		return "full every turn: new files do not arrive in key order; last full listing " + full
	default:
		return "full; last full listing " + full
	}
}
