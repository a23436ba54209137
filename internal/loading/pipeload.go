package loading

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/changes"
	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/errtext"
	"github.com/lakepipe/lakepipe/internal/fileread"
	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/internal/objstore"
	"github.com/lakepipe/lakepipe/internal/rowio"
	"github.com/lakepipe/lakepipe/internal/runcache"
	"github.com/lakepipe/lakepipe/internal/sqlast"
	"github.com/lakepipe/lakepipe/internal/sqlparse"
	"github.com/lakepipe/lakepipe/internal/staging"
)

// PipeRun is what a pipe's activities need, loaded from the catalog.
type PipeRun struct {
	e       *Loader
	Name    string
	Spec    catalog.PipeSpec
	copy    *sqlast.CopyIntoTable
	vol     *objstore.Volume
	target  core.LoadTarget
	opts    rowio.Options
	onError string
	purge   bool
	re      *regexp.Regexp // the COPY's REGEXP, nil without one
	// keepTmp is IGNORE_TMP_FILE = FALSE: writers' temporary files are
	// loaded like any other.
	keepTmp bool
	// tableCreated tells this table's load records from those of an
	// earlier table of the same name.
	tableCreated time.Time
	// keepReplaced: the table keeps one row per key and tracks changes,
	// so every load is staged and keeps the rows it replaces
	// (changes.PublishStaged).
	keepReplaced bool
	// stageKey: the key of a keyed table, whose loads stage on a cluster
	// too (staging.New).
	stageKey string
	// refs are the catalog objects the run was built from (see OpenPipe).
	refs []catalog.Ref
}

// OpenPipe loads a pipe for its activities, kept between its turns while
// the catalog objects it was built from do not change (runcache). A
// missing pipe is ErrPipeGone.
func (e *Loader) OpenPipe(ctx context.Context, p jobs.PipeParams) (*PipeRun, error) {
	return e.Runs.Open(ctx, e.Cat, runcache.Key(p), func(ctx context.Context) (*PipeRun, error) { return e.openPipe(ctx, p) })
}

// Refs are the catalog objects the run was built from (runcache.Run).
func (r *PipeRun) Refs() []catalog.Ref { return r.refs }

// openPipe builds a PipeRun from the catalog.
func (e *Loader) openPipe(ctx context.Context, p jobs.PipeParams) (*PipeRun, error) {
	e = e.WithSchema(p.Schema)
	spec, err := e.ActivePipe(ctx, p)
	if err != nil {
		return nil, err
	}
	stmt, err := sqlparse.Parse(spec.CopyStatement)
	if err != nil {
		return nil, core.Permanent(fmt.Errorf("pipe %s: its COPY statement no longer parses: %w", p.Name, err))
	}
	cp, ok := stmt.(*sqlast.CopyIntoTable)
	if !ok || cp.Volume == nil {
		return nil, core.Permanent(fmt.Errorf("pipe %s: not a volume pipe", p.Name))
	}
	run := &PipeRun{e: e, Name: p.Name, Spec: spec, copy: cp, purge: spec.Properties["ingest_mode"] == "LIST_PURGE"}
	if v := spec.Properties["ignore_tmp_file"]; v != "" {
		ignore, err := core.ParseBool("IGNORE_TMP_FILE", v)
		if err != nil {
			return nil, core.Permanent(fmt.Errorf("pipe %s: %w", p.Name, err))
		}
		run.keepTmp = !ignore
	}
	schema, table, tspec, err := e.Table(ctx, cp.Table)
	if err != nil {
		return nil, fmt.Errorf("pipe %s: %w", p.Name, err)
	}
	cols, err := e.LoadColumns(core.Display(schema, table), tspec, cp.Columns)
	if err != nil {
		return nil, core.Permanent(fmt.Errorf("pipe %s: %w", p.Name, err))
	}
	run.target = core.TableTarget(schema, table, tspec, cols)
	// Its loads name their pipe and generation, as a file's commit id
	// does (commitID), so maintenance removes those a dropped pipe left
	// open (changes.SweepAbandoned): a pipe created again under the name
	// loads the file under another id.
	run.target.Owner = core.PipeOwner(p.Schema, p.Name, spec.CreatedAt.UnixNano())
	run.tableCreated = tspec.CreatedAt
	run.keepReplaced, run.stageKey = changes.KeepsReplaced(tspec), changes.StageKey(tspec)
	var vspec catalog.VolumeSpec
	if run.vol, vspec, err = e.Volume(ctx, cp.Volume.Volume); err != nil {
		return nil, fmt.Errorf("pipe %s: %w", p.Name, err)
	}
	run.refs = []catalog.Ref{
		{Kind: catalog.KindPipe, Schema: p.Schema, Name: p.Name},
		{Kind: catalog.KindTable, Schema: schema, Name: table},
		{Kind: catalog.KindVolume, Schema: p.Schema, Name: cp.Volume.Volume},
		{Kind: catalog.KindConnection, Schema: core.GlobalSchema, Name: vspec.Connection},
	}
	if run.opts, err = e.FileOptions(cp.Volume); err != nil {
		return nil, core.Permanent(fmt.Errorf("pipe %s: %w", p.Name, err))
	}
	if re := cp.Volume.Regexp; re != nil {
		if run.re, err = regexp.Compile(*re); err != nil {
			return nil, core.Permanent(fmt.Errorf("pipe %s: REGEXP %q: %v", p.Name, *re, err))
		}
	}
	// A pipe's default is to skip a file with a bad row (Snowpipe's
	// SKIP_FILE): the file is recorded FAILED and the pipe goes on.
	run.onError = fileread.OnErrorSkipFile
	for _, o := range cp.Options {
		if strings.EqualFold(o.Key, "on_error") {
			if run.onError, err = fileread.CopyOnError(cp.Options); err != nil {
				return nil, core.Permanent(fmt.Errorf("pipe %s: %w", p.Name, err))
			}
			if run.onError == fileread.OnErrorAbort {
				run.onError = fileread.OnErrorSkipFile
			}
		}
	}
	return run, nil
}

// history is what load_history knows of one file for this pipe.
type history struct {
	status jobs.FileStatus
	etag   string
	commit uint64 // the load's commit id, from its load id (0: unknown)
}

// loadedCommit is the commit id of the rows of a loaded file: the one its
// record names (an id of an earlier release for files loaded before an
// upgrade), else the one this release derives.
func (r *PipeRun) loadedCommit(h history, f jobs.FileRef) uint64 {
	if h.commit != 0 {
		return h.commit
	}
	return r.commitID(f)
}

// histories reads the load records of paths, 1,000
// paths a query: a pipe whose COPY names its files reads them all at once,
// and a query naming them all would pass max_query_size.
func (r *PipeRun) histories(ctx context.Context, paths []string) (map[string]history, error) {
	q := "SELECT file_path, argMax(status, version), argMax(etag, version), argMax(load_id, version) FROM lakepipe.load_history WHERE table_name = " +
		chsql.QuoteString(r.target.Display) + " AND pipe_name = " + chsql.QuoteString(r.Name) +
		fmt.Sprintf(" AND last_copy_time >= toDateTime(%d)", r.tableCreated.Unix())
	out := make(map[string]history, len(paths))
	for chunk := range slices.Chunk(paths, historyChunk) {
		if err := r.readHistories(ctx, q+" AND file_path IN ("+chsql.StringList(chunk)+") GROUP BY file_path", out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// historyChunk is how many paths one read of load_history names.
const historyChunk = 1000

func (r *PipeRun) readHistories(ctx context.Context, q string, out map[string]history) error {
	res, err := r.e.St.Query(ctx, q)
	if err != nil {
		return fmt.Errorf("pipe %s: read load history: %w", r.Name, err)
	}
	for _, row := range res.Rows {
		h := history{status: jobs.FileStatus(row[1].(string)), etag: row[2].(string)}
		h.commit = core.ParseLoadID(row[3].(string))
		out[row[0].(string)] = h
	}
	return nil
}

// done reports whether a file needs no load: loaded once already (a path
// is loaded once, even when uploaded again), or failed in this very
// version (it is retried only when it changes).
func (h history) done(etag string) bool {
	switch h.status {
	case jobs.FileLoaded, jobs.FilePartiallyLoaded, jobs.FileSkipped:
		return true
	case jobs.FileFailed:
		return h.etag == etag
	}
	return false
}

// pending says whether a listed file is still to be handled: loaded, or
// under LIST_PURGE removed (the version loaded) or recorded SKIPPED (a
// new version at a path loaded before, which stays).
func (r *PipeRun) pending(h history, recorded bool, etag string) bool {
	if !recorded || !h.done(etag) {
		return true
	}
	return r.purge && (h.status == jobs.FileLoaded || h.status == jobs.FileSkipped && h.etag != etag)
}

// reloaded is the load record of a new version at a path a LIST_PURGE
// pipe loaded before: not loaded (a path loads once) and not removed
// (removing it would destroy data the pipe never read), with the reason.
// It names the commit of the version loaded, whose record it replaces:
// the last record of a path names the load that holds its rows, which
// maintenance reads (changes.SweepAbandoned).
func (r *PipeRun) reloaded(f jobs.FileRef, h history) fileread.FileLoad {
	return fileread.FileLoad{Path: f.Path, Size: f.Size, ETag: f.ETag, Status: jobs.FileSkipped, LoadID: core.LoadID(r.loadedCommit(h, f)),
		FirstError: fmt.Sprintf("the path was loaded before (ETag %s) and this is another version of it (ETag %s): a path loads once, and LIST_PURGE removes only the version it loaded, so this one stays in the volume", h.etag, f.ETag)}
}

// purgeable says whether the listed version of a recorded file is the one
// a LIST_PURGE pipe loaded and is to remove.
func (r *PipeRun) purgeable(h history, etag string) bool {
	return r.purge && h.status == jobs.FileLoaded && h.etag == etag
}

// ListFiles returns up to limit files the pipe has to handle (load, or purge
// when already loaded), hinted paths first, how many more are known to
// wait, and where the next listing resumes.
//
// The listing goes page by page (objstore.ListPages) and looks up
// load_history only for each page's keys, so memory is one page plus the
// batch, whatever the volume holds. When the last full listing found new
// files arriving in key order (state.Ordered), it starts after
// state.Cursor and stops once it has a batch: a turn costs what is new.
// Otherwise, or every Config.FullListingInterval, it lists everything,
// which also tells whether the order holds. CursorAfter is where the
// cursor goes once the batch is handled, when the listing showed the order.
func (r *PipeRun) ListFiles(ctx context.Context, hints []string, limit int, state jobs.ListState) (jobs.ListResult, error) {
	sub := ""
	if r.copy.Volume.Subdirectory != nil {
		sub = *r.copy.Volume.Subdirectory
	}
	if len(r.copy.Volume.Files) > 0 || r.copy.Volume.Subdirectory != nil && objstore.CheckPath(sub) != nil {
		// FILES (…) names a bounded set; a bad SUBDIRECTORY gets
		// selectFiles' error.
		files, backlog, err := r.listSelected(ctx, hints, limit)
		return jobs.ListResult{Files: files, Backlog: backlog}, err
	}
	now := time.Now().UTC()
	full := r.FullListingDue(state)
	start := state.Cursor
	if full {
		start = ""
	}

	var files []jobs.FileRef
	seen := map[string]bool{}
	// Hinted paths (event notifications) first, whatever their key.
	if len(hints) > 0 {
		hinted, err := r.hinted(ctx, hints, limit)
		if err != nil {
			return jobs.ListResult{State: state}, err
		}
		for _, f := range hinted {
			seen[f.Path] = true
		}
		files = hinted
	}

	var (
		backlog    int
		inPrefix   = true // every key listed so far is handled
		maxDone    string // largest handled key
		minPending string // smallest key not handled
		pending    bool
		// The last listingLag+1 keys of the run of handled keys from
		// start: the cursor stays listingLag keys behind the run's end.
		prefix  = make([]string, listingLag+1) // a ring
		nPrefix int                            // keys put in it
		// The same for the run of keys handled or in this batch: where
		// the cursor goes once the batch is handled. Without it each turn
		// lists again the keys the turn before loaded (a batch more). It
		// is used only when this listing itself shows the order: handled
		// keys first, then the batch (inOrder). A listing with no handled
		// key before its batch (a pipe's first) shows nothing of the
		// order, and its cursor stays, as it does when a handled key
		// follows one to load: writers into several folders, whose next
		// files land among this batch's keys (TestPipeManySmallFiles), or
		// a straggler of parallel uploads (the next turn then moves on).
		inBatch = true
		after   = make([]string, listingLag+1)
		nAfter  int
		inOrder = true
	)
	err := r.vol.ListPages(ctx, sub, start, func(page []objstore.Object) error {
		if r.re != nil || !r.keepTmp {
			kept := page[:0]
			for _, o := range page {
				if r.selects(o.Path) {
					kept = append(kept, o)
				}
			}
			page = kept
		}
		if len(page) == 0 {
			return nil
		}
		paths := make([]string, len(page))
		for i, o := range page {
			paths[i] = o.Path
		}
		hist, err := r.histories(ctx, paths)
		if err != nil {
			return err
		}
		for _, o := range page {
			h, recorded := hist[o.Path]
			handled := recorded && h.done(o.ETag)
			if handled {
				maxDone = max(maxDone, o.Path)
				if inPrefix {
					prefix[nPrefix%len(prefix)] = o.Path
					nPrefix++
				} else {
					inOrder = false
				}
			} else {
				inPrefix = false
				if !pending || o.Path < minPending {
					minPending, pending = o.Path, true
				}
			}
			// A handled file may still be to purge (or to record SKIPPED,
			// a new version at a loaded path).
			todo := !handled || r.pending(h, true, o.ETag)
			taken := false
			switch {
			case !todo:
			case seen[o.Path]:
				taken = true // hinted
			case len(files) < limit:
				files = append(files, jobs.FileRef{Path: o.Path, Size: o.Size, ETag: o.ETag, Modified: o.Modified})
				taken = true
			default:
				backlog++
			}
			if inBatch && (!todo || taken) {
				after[nAfter%len(after)] = o.Path
				nAfter++
			} else {
				inBatch = false
			}
		}
		if !full && len(files) >= limit {
			if backlog == 0 && len(page) == objstore.PageSize {
				backlog = 1 // there may be more: the next turn looks at once
			}
			return objstore.ErrStopListing // a batch: enough for this turn
		}
		return nil
	})
	if err != nil {
		return jobs.ListResult{State: state}, fmt.Errorf("pipe %s: list %s: %w", r.Name, sub, err)
	}
	cursor := start
	if nPrefix >= len(prefix) {
		cursor = prefix[nPrefix%len(prefix)] // the oldest of the ring
	}
	next := jobs.ListState{Cursor: cursor, Ordered: state.Ordered, FullAt: state.FullAt}
	if full {
		// Ordered when nothing waits before the last handled key: then
		// files keep arriving after the cursor.
		next.Ordered = !pending || minPending > maxDone
		next.FullAt = now
		if !next.Ordered {
			next.Cursor = ""
		}
	}
	res := jobs.ListResult{Files: files, Backlog: backlog, State: next}
	if next.Ordered && inOrder && nPrefix > 0 && nAfter >= len(after) {
		res.CursorAfter = after[nAfter%len(after)]
	}
	return res, nil
}

// listingLag is how many handled keys a pipe's cursor stays behind the
// newest: writers upload in parallel, and a file whose key sorts a little
// before one already handled may land a moment later (16 uploaders leave
// at most 15 such files). Listing those keys again each turn finds them;
// a file that lands further back than listingLag keys is found by the
// next full listing.
const listingLag = 256

// FullListingDue reports whether the next listing of a pipe lists its
// whole volume: its files are not known to arrive in key order, or the
// last full listing is older than Config.FullListingInterval. (An empty
// cursor with the order known lists from the start, stopping at a batch:
// a volume with few handled keys, or none.)
func (r *PipeRun) FullListingDue(state jobs.ListState) bool {
	return !state.Ordered || time.Since(state.FullAt) >= r.e.Cfg.FullListingInterval
}

// hinted returns the hinted paths that exist and are not handled yet, at
// most max.
func (r *PipeRun) hinted(ctx context.Context, hints []string, max int) ([]jobs.FileRef, error) {
	uniq := make([]string, 0, len(hints))
	dup := map[string]bool{}
	for _, h := range hints {
		if !dup[h] {
			dup[h] = true
			uniq = append(uniq, h)
		}
	}
	hist, err := r.histories(ctx, uniq)
	if err != nil {
		return nil, err
	}
	var out []jobs.FileRef
	var missing []string
	look := func(paths []string) error {
		for _, p := range paths {
			if len(out) >= max {
				break
			}
			o, err := r.vol.StatListed(ctx, p)
			if errors.Is(err, objstore.ErrNotFound) {
				missing = append(missing, p)
				continue
			}
			if errors.Is(err, objstore.ErrRefused) {
				continue // a key the store will not serve: the listing decides
			}
			if err != nil {
				return fmt.Errorf("pipe %s: %w", r.Name, err)
			}
			if h, ok := hist[o.Path]; !r.pending(h, ok, o.ETag) {
				continue
			}
			if !r.inScope(o.Path) {
				continue
			}
			out = append(out, jobs.FileRef{Path: o.Path, Size: o.Size, ETag: o.ETag, Modified: o.Modified})
		}
		return nil
	}
	if err := look(uniq); err != nil {
		return nil, err
	}
	// A notification can come before its object shows (a store that lists
	// or serves it a moment later): look again for a few seconds before
	// leaving the path to the listing.
	for _, wait := range hintRetries {
		if len(missing) == 0 || len(out) >= max {
			break
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		again := missing
		missing = nil
		if err := look(again); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// hintRetries are the waits before looking again for a notified path that
// is not there yet: 7.5 s in all, paid only by a turn with such a path.
var hintRetries = []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}

// inScope reports whether a path of the volume is one the pipe loads (its
// SUBDIRECTORY and REGEXP).
func (r *PipeRun) inScope(path string) bool {
	src := r.copy.Volume
	if src.Subdirectory != nil {
		dir := strings.TrimSuffix(*src.Subdirectory, "/")
		if dir != "" && !strings.HasPrefix(path, dir+"/") {
			return false
		}
	}
	return r.selects(path)
}

// selects applies the pipe's REGEXP and IGNORE_TMP_FILE to a path.
func (r *PipeRun) selects(path string) bool {
	if !r.keepTmp && TempFile(path) {
		return false
	}
	return r.re == nil || r.re.MatchString(path)
}

// TempFile reports whether a path is a writer's temporary or marker file,
// which a pipe with IGNORE_TMP_FILE = TRUE (the default) never loads or
// purges: any part of the path that starts with "_" or "." (Spark's and
// Hadoop's _temporary/, _SUCCESS, _committed_*, Flink's .part-*.inprogress.*,
// .*.crc checksums, hidden files), or a name ending in .tmp, .temp,
// .inprogress or ._COPYING_ (hadoop fs -put while it copies).
func TempFile(path string) bool {
	for _, seg := range strings.Split(path, "/") {
		if strings.HasPrefix(seg, "_") || strings.HasPrefix(seg, ".") && seg != "." && seg != ".." {
			return true
		}
	}
	name := strings.ToLower(path[strings.LastIndexByte(path, '/')+1:])
	for _, suf := range []string{".tmp", ".temp", ".inprogress", "._copying_"} {
		if strings.HasSuffix(name, suf) {
			return true
		}
	}
	return false
}

// listSelected is ListFiles for a pipe whose COPY names its files: the
// set is bounded by the statement.
func (r *PipeRun) listSelected(ctx context.Context, hints []string, max int) ([]jobs.FileRef, int, error) {
	objs, err := r.e.SelectFiles(ctx, r.vol, r.copy.Volume)
	if err != nil {
		return nil, 0, fmt.Errorf("pipe %s: list: %w", r.Name, err)
	}
	paths := make([]string, len(objs))
	for i, o := range objs {
		paths[i] = o.Path
	}
	hist, err := r.histories(ctx, paths)
	if err != nil {
		return nil, 0, err
	}
	hinted := make(map[string]bool, len(hints))
	for _, h := range hints {
		hinted[h] = true
	}
	var first, rest []jobs.FileRef
	for _, o := range objs {
		h, seen := hist[o.Path]
		if !r.pending(h, seen, o.ETag) {
			continue
		}
		f := jobs.FileRef{Path: o.Path, Size: o.Size, ETag: o.ETag, Modified: o.Modified}
		if hinted[o.Path] {
			first = append(first, f)
		} else {
			rest = append(rest, f)
		}
	}
	all := append(first, rest...)
	if len(all) > max {
		return all[:max], len(all) - max, nil
	}
	return all, 0, nil
}

// commitID names one file version's load in this generation of the pipe;
// it tags the rows.
func (r *PipeRun) commitID(f jobs.FileRef) uint64 {
	return core.FileCommit(r.e.Cfg.Workspace, r.e.Cfg.Schema, r.Name, r.Spec.CreatedAt.UnixNano(), f)
}

// earlierCommitIDs are the ids earlier releases gave the load: an attempt
// of one of them that died leaves rows under those (core.EarlierFileCommits).
func (r *PipeRun) earlierCommitIDs(f jobs.FileRef) []uint64 {
	return core.EarlierFileCommits(r.e.Cfg.Workspace, r.e.Cfg.Schema, r.Name, f)
}

// LoadFile loads one file exactly once:
//
//  1. a file already recorded LOADED is not loaded again (only purged);
//  2. rows tagged with this load's commit id but not recorded are the
//     remains of an attempt that died: they are deleted first;
//  3. the rows are inserted, tagged with the commit id;
//  4. the load is recorded in load_history (the commit point);
//  5. with LIST_PURGE the file is deleted, only after the record.
//
// Any step can fail or the process die; running LoadFile again converges.
func (r *PipeRun) LoadFile(ctx context.Context, f jobs.FileRef) (jobs.FileResult, error) {
	res := jobs.FileResult{Path: f.Path}
	hist, err := r.histories(ctx, []string{f.Path})
	if err != nil {
		return res, err
	}
	if h, ok := hist[f.Path]; ok && h.done(f.ETag) {
		res.Status = jobs.FileSkipped
		if h.status.Loaded() && h.etag == f.ETag {
			// A crash may have come between the load record and the change
			// log: registering again is a no-op otherwise.
			if err := r.e.TrackLoad(ctx, r.target.DB, r.target.Table, r.loadedCommit(h, f), -1); err != nil {
				return res, err
			}
		}
		if r.purgeable(h, f.ETag) {
			return res, r.vol.RemoveListed(ctx, f.Path)
		}
		if r.pending(h, true, f.ETag) {
			fl := r.reloaded(f, h)
			res.FirstError = fl.FirstError
			return res, r.e.RecordLoads(ctx, r.target.Display, r.Name, "", []fileread.FileLoad{fl})
		}
		return res, nil
	}
	commit := r.commitID(f)
	// The ids of earlier releases too: a load retried across an upgrade.
	if err := r.e.DropCommits(ctx, r.target, []uint64{commit}, r.earlierCommitIDs(f)...); err != nil {
		return res, fmt.Errorf("pipe %s: %w", r.Name, err)
	}
	target := r.target
	target.Commit = commit
	// Rows show only once the whole file is read (package staging).
	stg, err := staging.New(ctx, r.e.St, target, r.stageKey)
	if err != nil {
		return res, err
	}
	defer stg.Drop(ctx)
	obj := objstore.Object{Path: f.Path, Size: f.Size, ETag: f.ETag}
	fl, err := r.e.SafeLoadFile(ctx, r.vol, obj, r.copy.Volume, r.opts, stg.Into(target), r.onError)
	if errors.Is(err, objstore.ErrNotFound) {
		// Gone since the listing (another worker purged it), or replaced:
		// the next listing finds the new version.
		res.Status = jobs.FileSkipped
		return res, r.abandon(ctx, []uint64{commit})
	}
	if err != nil {
		var fe *fileread.FileError
		if !errors.As(err, &fe) {
			return res, err // transient: the activity retries
		}
		fl.Status, fl.FirstError = jobs.FileFailed, fe.Error()
	}
	boundError(&fl)
	if fl.Status == jobs.FileFailed {
		// A failed file leaves no rows behind (staged ones never showed).
		if stg == nil {
			if err := r.dropCommit(ctx, commit); err != nil {
				return res, err
			}
		}
		if err := r.abandon(ctx, []uint64{commit}); err != nil {
			return res, err
		}
		fl.Rows = 0
	} else {
		if err := r.open(ctx, []uint64{commit}); err != nil {
			return res, err
		}
		if err := r.e.PublishStaged(ctx, stg, target); err != nil {
			return res, err
		}
	}
	if err := r.e.RecordLoads(ctx, r.target.Display, r.Name, core.LoadID(commit), []fileread.FileLoad{fl}); err != nil {
		return res, err
	}
	if fl.Status != jobs.FileFailed {
		if err := r.e.TrackLoad(ctx, r.target.DB, r.target.Table, commit, fl.Rows); err != nil {
			return res, err
		}
	}
	if r.purge && fl.Status == jobs.FileLoaded {
		if err := r.vol.RemoveListed(ctx, f.Path); err != nil {
			return res, err
		}
	}
	res.Status, res.Rows, res.Rejected, res.FirstError = fl.Status, fl.Rows, fl.Rejected, fl.FirstError
	return res, nil
}

// open marks loads under way before their rows go in (changes.OpenLoads).
func (r *PipeRun) open(ctx context.Context, commits []uint64) error {
	if err := r.e.OpenLoads(ctx, r.target, commits); err != nil {
		return fmt.Errorf("pipe %s: %w", r.Name, err)
	}
	return nil
}

// abandon closes the loads (commit ids) of files this attempt does not
// load, replaced since the listing or failing, that an attempt before it
// opened and died in: their rows were removed before the file was read,
// and nothing will register them (changes.CloseAbandoned).
func (r *PipeRun) abandon(ctx context.Context, commits []uint64) error {
	if err := r.e.CloseAbandoned(ctx, r.target, commits); err != nil {
		return fmt.Errorf("pipe %s: %w", r.Name, err)
	}
	return nil
}

// dropCommit deletes the rows of an unrecorded attempt, if there are any.
func (r *PipeRun) dropCommit(ctx context.Context, commit uint64) error {
	if err := r.e.DropCommit(ctx, r.target, commit); err != nil {
		return fmt.Errorf("pipe %s: %w", r.Name, err)
	}
	return nil
}

// boundError caps a load's error: a hostile file's error may quote a whole
// cell, and load_history, the heartbeat and the activity result carry a
// bounded message.
func boundError(fl *fileread.FileLoad) {
	fl.FirstError = errtext.Cap(fl.FirstError, errtext.MaxMessage)
	if fl.Status == jobs.FileFailed && fl.FirstErrLine > 0 {
		fl.FirstError += " (the file was not loaded; upload a fixed version and it loads)"
	}
}

// LoadBatch loads small files (see StageFileBytes) together, each exactly
// once, as LoadFile does one:
//
//  1. one read of load_history for the batch's paths; files recorded
//     already are skipped (and purged with LIST_PURGE);
//  2. rows left by an attempt that died (tagged with the commit ids of
//     the files to load) are removed, in one mutation if there are any;
//  3. the files are read and converted, par at a time, each into memory;
//     a bad file fails alone and leaves nothing behind;
//  4. the rows of every good file go to the table in one INSERT, each row
//     tagged with its own file's commit id;
//  5. one load_history insert records every file (the commit point), one
//     change-log insert registers the loads, then LIST_PURGE removes the
//     loaded files.
//
// A crash anywhere leaves a state from which running LoadBatch again
// converges: before 5 the files are not recorded and their rows are
// removed by 2; after it they are skipped. Results are in files' order.
func (r *PipeRun) LoadBatch(ctx context.Context, files []jobs.FileRef, par int) ([]jobs.FileResult, error) {
	results := make([]jobs.FileResult, len(files))
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.Path
		results[i].Path = f.Path
	}
	hist, err := r.histories(ctx, paths)
	if err != nil {
		return nil, err
	}
	var (
		todo    []int
		commits []uint64
		track   []changes.LoadCommit
		purge   []string
		skipped []fileread.FileLoad // new versions at loaded paths (LIST_PURGE)
	)
	for i, f := range files {
		if h, ok := hist[f.Path]; ok && h.done(f.ETag) {
			results[i].Status = jobs.FileSkipped
			if h.status.Loaded() && h.etag == f.ETag {
				// A crash may have come between the load record and the
				// change log: registering again is a no-op otherwise.
				track = append(track, changes.LoadCommit{ID: r.loadedCommit(h, f), Rows: -1})
			}
			switch {
			case r.purgeable(h, f.ETag):
				purge = append(purge, f.Path)
			case r.pending(h, true, f.ETag):
				fl := r.reloaded(f, h)
				skipped = append(skipped, fl)
				results[i].FirstError = fl.FirstError
			}
			continue
		}
		todo = append(todo, i)
		commits = append(commits, r.commitID(f))
	}
	// The ids of earlier releases too: loads retried across an upgrade.
	var earlier []uint64
	for _, i := range todo {
		earlier = append(earlier, r.earlierCommitIDs(files[i])...)
	}
	if err := r.e.DropCommits(ctx, r.target, commits, earlier...); err != nil {
		return nil, fmt.Errorf("pipe %s: %w", r.Name, err)
	}

	// A batch is one INSERT; into a table that keeps replaced rows it goes
	// through a staging table, whose keys say what it replaces.
	var stg *staging.Stage
	if r.keepReplaced && len(todo) > 0 {
		if stg, err = staging.New(ctx, r.e.St, r.target, r.stageKey); err != nil {
			return nil, fmt.Errorf("pipe %s: %w", r.Name, err)
		}
		defer stg.Drop(ctx)
	}
	loads := make([]fileread.FileLoad, len(files))
	staged := make([]chstore.Staged, len(files))
	gone := make([]bool, len(files))
	alone := make([]bool, len(files)) // too large once read: loaded by LoadFile
	var held atomic.Int64             // bytes staged by the batch
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
		sem      = make(chan struct{}, max(par, 1))
	)
	for k, i := range todo {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			f := files[i]
			target := stg.Into(r.target)
			target.Commit = commits[k]
			obj := objstore.Object{Path: f.Path, Size: f.Size, ETag: f.ETag}
			fl, err := r.e.SafeStageFile(ctx, r.vol, obj, r.copy.Volume, r.opts, target, r.onError, &staged[i])
			if err == nil && held.Add(staged[i].Bytes()) > fileread.StageBatchMemory {
				err = chstore.ErrStageFull
			}
			if errors.Is(err, chstore.ErrStageFull) || errors.Is(err, objstore.ErrTooLarge) {
				held.Add(-staged[i].Bytes())
				staged[i], alone[i] = chstore.Staged{}, true
				return
			}
			if errors.Is(err, objstore.ErrNotFound) {
				gone[i] = true // gone since the listing (another worker purged it)
				return
			}
			if err != nil {
				var fe *fileread.FileError
				if !errors.As(err, &fe) {
					mu.Lock()
					firstErr = cmp.Or(firstErr, err) // transient: the activity retries
					mu.Unlock()
					return
				}
				fl.Status, fl.FirstError = jobs.FileFailed, fe.Error()
			}
			boundError(&fl)
			if fl.Status == jobs.FileFailed {
				staged[i], fl.Rows = chstore.Staged{}, 0 // nothing of it is written
			}
			fl.LoadID = core.LoadID(commits[k])
			loads[i] = fl
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}

	var write []chstore.Staged
	var record []fileread.FileLoad
	var abandoned []uint64 // not loaded now: replaced since the listing, or failing
	for k, i := range todo {
		if gone[i] {
			results[i].Status = jobs.FileSkipped
			abandoned = append(abandoned, commits[k])
			continue
		}
		if alone[i] {
			continue
		}
		fl := loads[i]
		if fl.Status == jobs.FileFailed {
			abandoned = append(abandoned, commits[k])
		}
		record = append(record, fl)
		if fl.Status != jobs.FileFailed {
			write = append(write, staged[i])
			track = append(track, changes.LoadCommit{ID: commits[k], Rows: fl.Rows})
			if r.purge && fl.Status == jobs.FileLoaded {
				purge = append(purge, fl.Path)
			}
		}
		results[i].Status, results[i].Rows, results[i].Rejected, results[i].FirstError = fl.Status, fl.Rows, fl.Rejected, fl.FirstError
	}
	if err := r.abandon(ctx, abandoned); err != nil {
		return nil, err
	}
	opening := make([]uint64, len(track))
	for i, t := range track {
		opening[i] = t.ID
	}
	if err := r.open(ctx, opening); err != nil {
		return nil, err
	}
	if err := r.e.St.InsertStaged(ctx, write); err != nil {
		return nil, fmt.Errorf("pipe %s: %w", r.Name, err)
	}
	if err := r.e.PublishStaged(ctx, stg, r.target); err != nil {
		return nil, fmt.Errorf("pipe %s: %w", r.Name, err)
	}
	if len(record) > 0 {
		if err := r.e.RecordLoads(ctx, r.target.Display, r.Name, "", record); err != nil {
			return nil, err
		}
	}
	if err := r.e.TrackLoads(ctx, r.target.DB, r.target.Table, track); err != nil {
		return nil, err
	}
	if len(skipped) > 0 {
		if err := r.e.RecordLoads(ctx, r.target.Display, r.Name, "", skipped); err != nil {
			return nil, err
		}
	}
	for _, p := range purge {
		if err := r.vol.RemoveListed(ctx, p); err != nil {
			return nil, err
		}
	}
	for _, i := range todo {
		if alone[i] {
			if results[i], err = r.LoadFile(ctx, files[i]); err != nil {
				return nil, err
			}
		}
	}
	return results, nil
}
