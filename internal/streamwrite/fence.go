package streamwrite

// Fencing of flush retries, safe with any number of write-service
// replicas behind a balancer that sends each attempt anywhere.
//
// A client numbers the attempts of a flush (tunnel.HeaderFlushAttempt)
// and moves to attempt a+1 only after giving up on attempt a. Each attempt
// writes its rows under its own commit id (core.FlushAttemptCommit), so no
// attempt's clean-up can remove another's rows. Then:
//
//   - Attempt 1, the common case, takes no lock and counts nothing: it
//     writes, then asks whether a retry has begun (a lock table or a
//     decision of the flush exists). If one has, the client moved on: it
//     removes its own rows and answers 503. Otherwise its rows are the
//     flush's: it registers them in the change log and answers.
//   - A retry (attempt 2 and later) first takes the flush's lock: CREATE
//     TABLE of a table named after the flush, which ClickHouse lets exactly
//     one caller do. Under it, it adopts an earlier attempt whose rows are
//     registered in the table's change log (registered rows are whole and
//     counted; a change-tracked table's lost answer costs no rewrite), or
//     else records itself as the winner, removes the rows of every earlier
//     attempt, writes its own, and removes earlier attempts' rows once more
//     (blocks of an attempt still dying when it looked). It drops the lock
//     when done.
//
// Why no rows are lost or doubled: a retry's lock exists before it looks
// at any rows; attempt 1 asks after its write is complete. Either attempt
// 1 saw the retry (then it removes its own rows and registers nothing), or
// its write was complete before the retry looked (then the retry finds its
// rows and, on a change-tracked table, their registration, which attempt 1
// makes right after asking: a retry that finds rows without it waits up to
// registrationGrace for it). Retries run one at a time, each deciding with
// what the earlier ones left; an attempt is bounded by MaxAttempt, so a
// lock older than that plus lockStaleMargin belongs to a dead attempt and
// is taken over.
//
// What remains: an attempt 1 that dies after some of its blocks landed and
// after the retry's last look leaves those blocks until maintenance sweeps
// the flush (SweepFlushRetries, once no attempt can still write); so does
// a client that gives up for good in the middle of a write. An attempt 1
// that stalls longer than registrationGrace between its question and its
// registration can have its rows replaced although a table stream already
// saw them registered.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/lakepipe/lakepipe/internal/catalog"
	"strconv"
	"strings"
	"time"

	"github.com/lakepipe/lakepipe/internal/changes"
	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/schemas"
)

// DefaultMaxAttempt bounds one attempt of a flush when the Writer sets no
// MaxAttempt: past it the attempt stops writing. It is above the write
// service's longest request (its read timeout, 10 minutes by default).
const DefaultMaxAttempt = 15 * time.Minute

const (
	// lockStaleMargin is added to MaxAttempt before a lock is taken over,
	// for the clocks of ClickHouse and of the write service to differ.
	lockStaleMargin = time.Minute
	// registrationGrace is how long a retry waits for attempt 1 to
	// register rows it wrote.
	registrationGrace = 2 * time.Second
)

// ErrBusy marks a flush whose earlier retry still holds its lock until the
// flush's timeout: nothing was written; the client tries again (503).
var ErrBusy = errors.New("an earlier attempt of this flush is still being written")

// ErrSuperseded marks an attempt whose client had already sent a later
// one: its rows were removed, and the later attempt answers (503).
var ErrSuperseded = errors.New("a later attempt of this flush took it over")

func (e *Writer) maxAttempt() time.Duration {
	if e.MaxAttempt > 0 {
		return e.MaxAttempt
	}
	return DefaultMaxAttempt
}

// lockName is the lock table of one flush.
func lockName(session, flush string) string {
	return fmt.Sprintf("flush_%016x", core.FlushIDCommit(session, flush))
}

// lockFlush takes the flush's lock, waiting while a live retry holds it
// and taking over one left by a dead attempt. release drops it.
func (e *Writer) lockFlush(ctx context.Context, session, flush string) (release func(), err error) {
	node := e.St.LockNode()
	name := lockName(session, flush)
	table := chsql.Table(schemas.LocksDB, name)
	wait := 20 * time.Millisecond
	for {
		err := node.Exec(ctx, "CREATE TABLE "+table+" (at DateTime) ENGINE = Null")
		if err == nil {
			break
		}
		if !chstore.IsCode(err, chstore.CodeTableExists) {
			return nil, fmt.Errorf("lock flush %s: %w: %w", flush, ErrStoreUnavailable, err)
		}
		if err := e.takeOverStale(ctx, node, name); err != nil {
			return nil, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("flush %s: %w", flush, ErrBusy)
		case <-t.C:
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
	taken := time.Now()
	return func() {
		// A holder past MaxAttempt may have lost the lock to a taker:
		// dropping it then would drop the taker's.
		if time.Since(taken) > e.maxAttempt() {
			return
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = node.Exec(cctx, "DROP TABLE IF EXISTS "+table) // a lock left behind is taken over when stale
	}, nil
}

// takeOverStale removes the lock name when it is older than any attempt
// can run. RENAME succeeds for one caller only, so two takers never both
// think they removed it.
func (e *Writer) takeOverStale(ctx context.Context, node *chstore.Store, name string) error {
	age, err := node.Strings(ctx, fmt.Sprintf("SELECT toString(toUInt64(now() - metadata_modification_time)) FROM system.tables WHERE database = %s AND name = %s",
		chsql.QuoteString(schemas.LocksDB), chsql.QuoteString(name)))
	if err != nil {
		return fmt.Errorf("lock %s: %w: %w", name, ErrStoreUnavailable, err)
	}
	if len(age) != 1 {
		return nil // released meanwhile
	}
	secs, _ := strconv.ParseInt(age[0], 10, 64)
	if time.Duration(secs)*time.Second < e.maxAttempt()+lockStaleMargin {
		return nil
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	stale := chsql.Table(schemas.LocksDB, "stale_"+name+"_"+hex.EncodeToString(b[:]))
	if err := node.Exec(ctx, "RENAME TABLE "+chsql.Table(schemas.LocksDB, name)+" TO "+stale); err != nil {
		return nil // another taker won, or it was released
	}
	_ = node.Exec(ctx, "DROP TABLE IF EXISTS "+stale)
	return nil
}

// superseded says whether a retry of the flush has begun: its lock or a
// decision exists. Asked on the lock node, where both are written.
func (e *Writer) superseded(ctx context.Context, session, flush string) (bool, error) {
	n, err := e.St.LockNode().Strings(ctx, fmt.Sprintf(
		"SELECT toString((SELECT count() FROM system.tables WHERE database = %s AND name = %s) + (SELECT count() FROM lakepipe.flush_retries WHERE session = %s AND flush_id = %s))",
		chsql.QuoteString(schemas.LocksDB), chsql.QuoteString(lockName(session, flush)), chsql.QuoteString(session), chsql.QuoteString(flush)))
	if err != nil {
		return false, fmt.Errorf("flush %s: ask for its retries: %w: %w", flush, ErrStoreUnavailable, err)
	}
	return len(n) != 1 || n[0] != "0", nil
}

// latestRetry is the highest attempt of the flush that recorded a
// decision, 0 when none did. A retry that finds a later one under the lock
// is late itself (held up on the way): the later one decided.
func (e *Writer) latestRetry(ctx context.Context, session, flush string) (int, error) {
	n, err := e.St.LockNode().Strings(ctx, fmt.Sprintf("SELECT toString(max(attempt)) FROM lakepipe.flush_retries WHERE session = %s AND flush_id = %s",
		chsql.QuoteString(session), chsql.QuoteString(flush)))
	if err != nil {
		return 0, fmt.Errorf("flush %s: read its retries: %w: %w", flush, ErrStoreUnavailable, err)
	}
	if len(n) != 1 {
		return 0, nil
	}
	return strconv.Atoi(n[0])
}

// recordDecision writes which attempt's rows are the flush's, before any
// row is removed or written under it.
func (e *Writer) recordDecision(ctx context.Context, s StreamSession, f StreamFlush, winner uint64) error {
	err := e.St.LockNode().InsertRows(ctx, schemas.SystemDB, "flush_retries", []string{"session", "flush_id", "attempt", "db", "table", "winner", "records", "at"},
		[][]any{{s.ID, f.ID, uint32(f.Attempt), s.Schema, s.Table, winner, f.Records, time.Now().UTC()}})
	if err != nil {
		return fmt.Errorf("flush %s: record its retry: %w: %w", f.ID, ErrStoreUnavailable, err)
	}
	return nil
}

// priorCommits are the commit ids attempts before attempt could have
// written, with the id releases before 2026-12-04 gave the flush.
func priorCommits(session, flush string, attempt int) []uint64 {
	out := []uint64{core.LegacyFlushCommit(session, flush)}
	for a := 1; a < attempt; a++ {
		out = append(out, core.FlushAttemptCommit(session, flush, a))
	}
	return out
}

// registeredCommit finds an earlier attempt whose rows the table's change
// log registered, waiting registrationGrace when an earlier attempt has
// rows but no registration yet (attempt 1 between its question and its
// registration). found is false when none is.
func (e *Writer) registeredCommit(ctx context.Context, t core.LoadTarget, prior []uint64) (commit uint64, rows int64, found bool, err error) {
	ask := func() error {
		res, err := e.St.Query(ctx, fmt.Sprintf("SELECT commit_id, rows FROM lakepipe.table_commits WHERE db = %s AND table = %s AND commit_id IN (%s) LIMIT 1",
			chsql.QuoteString(t.DB), chsql.QuoteString(t.Table), changes.IDList(prior)))
		if err != nil {
			return fmt.Errorf("flush into %s: read its change log: %w: %w", t.Display, ErrStoreUnavailable, err)
		}
		if len(res.Rows) == 1 {
			commit, _ = res.Rows[0][0].(uint64)
			r, _ := res.Rows[0][1].(uint64)
			rows, found = int64(r), true
		}
		return nil
	}
	if err := ask(); err != nil || found {
		return commit, rows, found, err
	}
	have, err := e.St.Strings(ctx, fmt.Sprintf("SELECT count() FROM %s WHERE %s IN (%s)",
		chsql.Table(t.DB, t.Table), chsql.QuoteIdent(core.CommitColumn), changes.IDList(prior)))
	if err != nil {
		return 0, 0, false, fmt.Errorf("flush into %s: count earlier attempts: %w: %w", t.Display, ErrStoreUnavailable, err)
	}
	if len(have) != 1 || have[0] == "0" {
		return 0, 0, false, nil
	}
	for deadline := time.Now().Add(registrationGrace); time.Now().Before(deadline); {
		t := time.NewTimer(200 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, 0, false, ctx.Err()
		case <-t.C:
		}
		if err := ask(); err != nil || found {
			return commit, rows, found, err
		}
	}
	return 0, 0, false, nil
}

// SweepFlushRetries removes what retried flushes left once none of their
// attempts can still write (MaxAttempt plus the margin after the last
// retry): rows of every attempt but the winner, and the winner's own when
// it never finished (its client saw the flush fail). Then it forgets the
// flushes, and drops locks left by dead attempts. Retried flushes are few;
// each is swept under its lock.
func (e *Writer) SweepFlushRetries(ctx context.Context) error {
	node := e.St.LockNode()
	after := int64((e.maxAttempt() + lockStaleMargin) / time.Second)
	res, err := node.Query(ctx, fmt.Sprintf(`SELECT session, flush_id, max(attempt), argMax(db, attempt), argMax(table, attempt), argMax(winner, attempt), argMax(records, attempt)
		FROM lakepipe.flush_retries GROUP BY session, flush_id HAVING max(at) < now() - %d LIMIT 1000`, after))
	if err != nil {
		return fmt.Errorf("sweep retried flushes: %w", err)
	}
	var done []string
	for _, r := range res.Rows {
		session, flush := r[0].(string), r[1].(string)
		attempt, _ := r[2].(uint32)
		t := core.LoadTarget{DB: r[3].(string), Table: r[4].(string), Display: core.Display(r[3].(string), r[4].(string))}
		winner, _ := r[5].(uint64)
		records, _ := r[6].(int64)
		if err := e.sweepFlush(ctx, session, flush, int(attempt), t, winner, records); err != nil {
			return err
		}
		done = append(done, "("+chsql.QuoteString(session)+", "+chsql.QuoteString(flush)+")")
	}
	if len(done) > 0 {
		if _, err := (&core.Core{St: node}).Mutate(ctx, schemas.SystemDB, "flush_retries", "DELETE WHERE (session, flush_id) IN ("+strings.Join(done, ", ")+")"); err != nil {
			return fmt.Errorf("forget %d swept flushes: %w", len(done), err)
		}
	}
	stale, err := node.Strings(ctx, fmt.Sprintf("SELECT name FROM system.tables WHERE database = %s AND name LIKE 'flush\\_%%' AND metadata_modification_time < now() - %d",
		chsql.QuoteString(schemas.LocksDB), after))
	if err != nil {
		return fmt.Errorf("sweep flush locks: %w", err)
	}
	for _, name := range stale {
		if err := e.takeOverStale(ctx, node, name); err != nil {
			return err
		}
	}
	return nil
}

func (e *Writer) sweepFlush(ctx context.Context, session, flush string, attempt int, t core.LoadTarget, winner uint64, records int64) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	release, err := e.lockFlush(ctx, session, flush)
	if err != nil {
		return fmt.Errorf("sweep flush %s of %s: %w", flush, t.Display, err)
	}
	defer release()
	var spec catalog.TableSpec
	found, err := e.Cat.Get(ctx, catalog.KindTable, t.DB, t.Table, &spec)
	if err != nil {
		return fmt.Errorf("sweep flush %s of %s: %w", flush, t.Display, err)
	}
	if !found || spec.Keyed() {
		return nil // dropped; or keyed, whose rows are replaced, never removed (keyed.go)
	}
	losers := priorCommits(session, flush, attempt+1)
	keep := true // a flush of unknown size: its winner cannot be told unfinished
	if records >= 0 {
		n, err := e.CommitRows(ctx, t.DB, t.Table, winner)
		if tableGone(err) {
			return nil // the table (or its database) was dropped
		}
		if err != nil {
			return err
		}
		keep = n == records
	}
	if keep {
		for i, c := range losers {
			if c == winner {
				losers = append(losers[:i], losers[i+1:]...)
				break
			}
		}
	}
	t.Tracked = changes.Tracked(spec) // the losers' open marks are closed too
	if err := e.dropAttempts(ctx, t, losers); err != nil && !tableGone(err) {
		return fmt.Errorf("sweep flush %s of %s: %w", flush, t.Display, err)
	}
	return nil
}

// tableGone reports an error saying a table, or its database, does not
// exist.
func tableGone(err error) bool {
	return chstore.IsCode(err, chstore.CodeUnknownTable) || chstore.IsCode(err, chstore.CodeUnknownDatabase)
}
