package core

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"strconv"

	"github.com/lakepipe/lakepipe/internal/jobs"
)

// Commit ids tag the rows of one load (see package changes). Those of
// pipes, Kafka batches and flushes are derived from what identifies the
// load, so that a retry finds, and removes, the rows of the attempt it
// replaces.
//
// An id is SHA-256 over a domain (the kind of load) and the load's fields,
// each length-prefixed, truncated to 64 bits. Aiming at a given load's id
// from other inputs then takes ~2^64 hashes, so a writer who picks flush
// ids cannot steer a flush's clean-up at another load's rows, as FNV-1a
// (the ids before 2026-12-04) allowed. It is deliberately not keyed: every
// worker and write service derives the same id with no key to share or
// leak. Two loads meeting by chance is as unlikely as with any 64-bit id.
//
// The Legacy… functions give the ids releases before 2026-12-04 gave the
// same loads: a load retried across an upgrade looks for the rows of its
// earlier attempt under these too.

// Domains of commit ids.
const (
	domainPipeFile   = "lakepipe pipe file"
	domainKafkaBatch = "lakepipe kafka batch"
	domainFlush      = "lakepipe flush"
)

func commitHash(domain string, fields ...string) uint64 {
	h := sha256.New()
	var n [8]byte
	for _, f := range append([]string{domain}, fields...) {
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write([]byte(f))
	}
	var sum [sha256.Size]byte
	return binary.BigEndian.Uint64(h.Sum(sum[:0])) | 1
}

// FileCommit names one file version's load by one generation of a pipe
// (its creation time, as Kafka batches): a pipe created again under the
// name loads the file under another id, so the loads the dropped one left
// open are its own alone, and maintenance can remove them
// (changes.SweepAbandoned) without touching the new pipe's.
func FileCommit(workspace, schema, pipe string, generation int64, f jobs.FileRef) uint64 {
	return commitHash(domainPipeFile, workspace, schema, pipe, strconv.FormatInt(generation, 10), f.Path, f.ETag)
}

// EarlierFileCommits are the ids earlier releases gave the same load:
// without the generation (2026-12-04 to 2026-12-07), and FNV-1a's
// (LegacyFileCommit).
func EarlierFileCommits(workspace, schema, pipe string, f jobs.FileRef) []uint64 {
	return []uint64{commitHash(domainPipeFile, workspace, schema, pipe, f.Path, f.ETag), LegacyFileCommit(workspace, schema, pipe, f)}
}

// KafkaCommit names one batch of a Kafka pipe: the offsets it starts from,
// in the pipe's offset epoch (jobs.KafkaState.Epoch: offsets repeat only
// after a RESET_KAFKA_GROUP_OFFSETS moved the pipe back). Epoch 0 adds no
// field: the ids of batches before the first reset are those of earlier
// releases.
func KafkaCommit(workspace, schema, pipe string, generation, epoch int64, from []jobs.PartitionOffset) uint64 {
	fields := []string{workspace, schema, pipe, strconv.FormatInt(generation, 10)}
	if epoch > 0 {
		fields = append(fields, "epoch:"+strconv.FormatInt(epoch, 10))
	}
	for _, o := range from {
		fields = append(fields, fmt.Sprintf("%d:%d", o.Partition, o.Offset))
	}
	return commitHash(domainKafkaBatch, fields...)
}

// flushIDCommit names one flush of a streaming-write session.
func FlushIDCommit(session, flush string) uint64 {
	return commitHash(domainFlush, session, flush)
}

// FlushAttemptCommit names one attempt of a flush. The first attempt (and
// an attempt of a client that does not number them, attempt 0) uses the
// flush's own id, so that a client retrying across the upgrade finds it;
// later attempts get their own, so that no attempt's clean-up can remove
// another's rows.
func FlushAttemptCommit(session, flush string, attempt int) uint64 {
	if attempt <= 1 {
		return FlushIDCommit(session, flush)
	}
	return commitHash(domainFlush, session, flush, strconv.Itoa(attempt))
}

func LegacyFileCommit(workspace, schema, pipe string, f jobs.FileRef) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%s", workspace, schema, pipe, f.Path, f.ETag)
	return h.Sum64() | 1
}

func LegacyKafkaCommit(workspace, schema, pipe string, generation int64, from []jobs.PartitionOffset) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "kafka\x00%s\x00%s\x00%s\x00%d", workspace, schema, pipe, generation)
	for _, o := range from {
		fmt.Fprintf(h, "\x00%d:%d", o.Partition, o.Offset)
	}
	return h.Sum64() | 1
}

func LegacyFlushCommit(session, flush string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(session))
	h.Write([]byte{0})
	h.Write([]byte(flush))
	return h.Sum64() | 1
}

// LoadID is how load_history names the load of a commit: its id in 16
// hex digits. Maintenance reads it back (changes.SweepAbandoned).
func LoadID(commit uint64) string { return fmt.Sprintf("%016x", commit) }

// ParseLoadID reads a LoadID; 0 for a load id of another kind.
func ParseLoadID(s string) uint64 {
	if len(s) != 16 {
		return 0
	}
	id, _ := strconv.ParseUint(s, 16, 64)
	return id
}

// randomCommit is a commit id for a one-shot load.
func RandomCommit() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:]) | 1
}

func NewLoadID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
