package schemas

// SystemDB is the ClickHouse database of lakepipe's catalog and histories.
const SystemDB = "lakepipe"

// TrashDB keeps dropped tables until UNDROP or the end of their retention.
const TrashDB = "lakepipe_trash"

// TempDB holds short-lived tables (files read by SELECT … FROM VOLUME).
const TempDB = "lakepipe_tmp"

// LocksDB holds the lock tables of retried flushes (see package
// streamwrite).
const LocksDB = "lakepipe_locks"

// ChangesDB holds, per change-tracked table, the rows its DELETEs and
// UPDATEs removed (see package engine, changes.go).
const ChangesDB = "lakepipe_changes"

// Version is the catalog schema version this release writes.
const Version = 11

// Migration brings the system tables from version From-1 to From.
type Migration struct {
	Version    int
	Statements []string
}

// Migrations in order. Applied ones are recorded in lakepipe.meta; a newer
// release appends, never edits.
var Migrations = []Migration{{
	Version: 1,
	Statements: []string{
		"CREATE DATABASE IF NOT EXISTS lakepipe",
		"CREATE DATABASE IF NOT EXISTS lakepipe_trash",
		"CREATE DATABASE IF NOT EXISTS lakepipe_tmp",
		// Every catalog object is one row; a change writes a new row with
		// a higher version and reads take the newest (FINAL / argMax).
		`CREATE TABLE IF NOT EXISTS lakepipe.objects (
			kind String,
			schema String,
			name String,
			spec String,
			secret String,
			deleted UInt8,
			version UInt64,
			updated_at DateTime
		) ENGINE = ReplacingMergeTree(version) ORDER BY (kind, schema, name)`,
		`CREATE TABLE IF NOT EXISTS lakepipe.meta (
			key String,
			value String,
			version UInt64
		) ENGINE = ReplacingMergeTree(version) ORDER BY key`,
		// A directory snapshot per ALTER VOLUME … REFRESH.
		`CREATE TABLE IF NOT EXISTS lakepipe.directory (
			volume String,
			refresh_id UInt64,
			relative_path String,
			size UInt64,
			last_modified_time DateTime,
			etag String
		) ENGINE = MergeTree ORDER BY (volume, refresh_id, relative_path)`,
		`CREATE TABLE IF NOT EXISTS lakepipe.load_history (
			table_name String,
			pipe_name String,
			file_path String,
			etag String,
			file_size UInt64,
			last_copy_time DateTime,
			status String,
			first_error_message String,
			first_error_line Int64,
			rows_loaded UInt64,
			rows_rejected UInt64,
			load_id String,
			version UInt64
		) ENGINE = ReplacingMergeTree(version) ORDER BY (table_name, file_path, pipe_name)`,
	},
}, {
	Version: 2,
	Statements: []string{
		`CREATE TABLE IF NOT EXISTS lakepipe.refresh_history (
			schema String,
			name String,
			refresh_id String,
			trigger String,
			state String,
			refresh_mode String,
			mode_reason String,
			start_time DateTime,
			end_time DateTime,
			duration_ms UInt64,
			source_tables String,
			rows_inserted UInt64,
			rows_deleted UInt64,
			error_message String
		) ENGINE = MergeTree ORDER BY (schema, name, start_time)`,
	},
}, {
	Version: 3,
	Statements: []string{
		"CREATE DATABASE IF NOT EXISTS lakepipe_changes",
		// The change log of change-tracked tables: one row per committed
		// write, in commit-version order. The rows a write added carry its
		// commit_id in the table's _lp_commit column; the rows a DELETE or
		// UPDATE removed are kept in lakepipe_changes.
		`CREATE TABLE IF NOT EXISTS lakepipe.table_commits (
			db String,
			table String,
			version UInt64,
			commit_id UInt64,
			kind String,
			rows UInt64,
			committed_at DateTime
		) ENGINE = MergeTree ORDER BY (db, table, version)`,
	},
}, {
	Version: 4,
	Statements: []string{
		// A pipe's job history: one row per turn that loaded (package
		// pipehistory); a retried attempt's row replaces the earlier one.
		`CREATE TABLE IF NOT EXISTS lakepipe.pipe_history (
			query_tag String,
			schema String,
			pipe_name String,
			run_id String,
			job_id String,
			kind String,
			start_time DateTime,
			end_time DateTime,
			status String,
			files UInt64,
			files_failed UInt64,
			rows_loaded UInt64,
			rows_rejected UInt64,
			bytes UInt64,
			offsets_before String,
			offsets_after String,
			error String,
			version UInt64
		) ENGINE = ReplacingMergeTree(version) ORDER BY (schema, pipe_name, run_id, job_id)`,
	},
}, {
	Version: 5,
	Statements: []string{
		// Locks of retried flushes: one empty table per flush being
		// retried, made by CREATE TABLE, which succeeds once (package
		// streamwrite, fence.go). Never replicated: locks live on one node.
		"CREATE DATABASE IF NOT EXISTS " + LocksDB,
		// What each retry of a flush decided: which attempt's rows are the
		// flush's. Written only by retries (attempt 2 and later), under the
		// flush's lock; maintenance clears the losers and the rows.
		`CREATE TABLE IF NOT EXISTS lakepipe.flush_retries (
			session String,
			flush_id String,
			attempt UInt32,
			db String,
			table String,
			winner UInt64,
			records Int64,
			at DateTime
		) ENGINE = MergeTree ORDER BY (session, flush_id)`,
	},
}, {
	Version: 6,
	Statements: []string{
		// Which commits' rows each DELETE, UPDATE or key replacement of a
		// change-tracked table removed: the distinct (_lp_orig_commit,
		// _lp_commit) pairs of its change table, written after the rows
		// are copied there and before they leave the table. A summary's
		// refresh looks up the commits it reads here (the check for
		// removals under way, package dynamic), through the key, instead
		// of scanning every removed row the change table retains.
		// Trimmed with the change log.
		`CREATE TABLE IF NOT EXISTS lakepipe.removal_origins (
			db String,
			table String,
			orig_commit UInt64,
			commit_id UInt64
		) ENGINE = ReplacingMergeTree ORDER BY (db, table, orig_commit, commit_id)`,
	},
}, {
	Version: 7,
	Statements: []string{
		// The commits of change-tracked tables whose rows may be in the
		// table before the commit is registered: a writer writes +1
		// before the rows, registering writes -1 (package changes,
		// open.go). A reader of committed rows names the few commits open
		// or registered after its version, instead of every commit
		// registered before it.
		`CREATE TABLE IF NOT EXISTS lakepipe.open_commits (
			db String,
			table String,
			commit_id UInt64,
			sign Int8
		) ENGINE = CollapsingMergeTree(sign) ORDER BY (db, table, commit_id)`,
	},
}, {
	Version: 8,
	Statements: []string{
		// Who opened a commit (a Kafka pipe, by schema, name and
		// generation: JSON, core.PipeOwner) and when: maintenance closes
		// the loads of a dropped pipe abandoned for good
		// (changes.SweepAbandoned). Marks
		// written before have no owner and are never swept. One column per
		// statement, since ClickHouse 18.16 has no ADD COLUMN IF NOT EXISTS:
		// the catalog's migration takes "already exists" as done (a process
		// that died between a statement and recording the version, two
		// processes migrating at once).
		`ALTER TABLE lakepipe.open_commits ADD COLUMN owner String`,
		`ALTER TABLE lakepipe.open_commits ADD COLUMN opened_at DateTime DEFAULT now()`,
	},
}, {
	Version: 9,
	Statements: []string{
		// The writer leases of processes that write change-tracked tables
		// outside pipes (COPY INTO, INSERT, UPDATE, MERGE INTO, streaming
		// flushes), renewed every minute: maintenance removes the loads
		// of a lease not renewed for a day (package writerlease). One row
		// per lease once merged; leases not renewed for two days are
		// deleted.
		`CREATE TABLE IF NOT EXISTS lakepipe.writer_leases (
			owner String,
			renewed_at DateTime
		) ENGINE = ReplacingMergeTree(renewed_at) ORDER BY owner`,
	},
}, {
	Version: 10,
	Statements: []string{
		// Where each Kafka pipe is, per pipe generation (owner:
		// core.PipeOwner) and offset epoch: its last batch, started (before
		// any of its rows) or committed (its rows all in, before its
		// registration), with its commit id, the offsets it started from
		// and, once committed, its result, whose offsets are where it
		// ended (package kafkaload, position.go). A retry whose earlier
		// attempt's answer was lost, or a batch run again after its
		// workflow was reset, finds it there instead of loading the
		// records again. version orders a pipe's rows: twice the sum of the
		// offsets a row stands at (a committed batch's end, a started one's
		// start), plus one when started. One row per pipe and epoch once
		// merged; rows not written for the load history's retention are
		// deleted.
		`CREATE TABLE IF NOT EXISTS lakepipe.kafka_positions (
			owner String,
			epoch Int64,
			commit_id UInt64,
			committed UInt8,
			start String,
			result String,
			version UInt64,
			written_at DateTime
		) ENGINE = ReplacingMergeTree(version) ORDER BY (owner, epoch)`,
		// The statements (UPDATE, DELETE) of change-tracked tables whose
		// mutation ClickHouse accepted, by commit: written right after the
		// ALTER returns, before the statement waits for it and registers
		// its commit. A statement whose process died after it cannot be
		// taken back (the mutation goes on without it): maintenance
		// registers its commit instead of removing its rows
		// (changes.SweepAbandoned). Rows older than two days are deleted.
		`CREATE TABLE IF NOT EXISTS lakepipe.issued_mutations (
			db String,
			table String,
			commit_id UInt64,
			written_at DateTime DEFAULT now()
		) ENGINE = MergeTree ORDER BY (db, table, commit_id)`,
	},
}, {
	Version: 11,
	Statements: []string{
		// The version of a file a load read (its last-modified time, with
		// its etag), and whether the load's COPY removes the files it
		// loads (PURGE = TRUE). A COPY … PURGE whose process stopped
		// between recording a file and removing it left the file, its rows
		// committed: the same COPY run again finds the record of that very
		// version and removes the file instead of loading it twice
		// (loading.CopyIntoTable). An etag alone does not tell a file left
		// behind from the same bytes uploaded again. One column per
		// statement (18.16 has no ADD COLUMN IF NOT EXISTS; see version 8).
		`ALTER TABLE lakepipe.load_history ADD COLUMN file_modified DateTime DEFAULT toDateTime(0)`,
		`ALTER TABLE lakepipe.load_history ADD COLUMN purge UInt8 DEFAULT 0`,
	},
}}
