package core

import (
	"testing"

	"github.com/lakepipe/lakepipe/internal/jobs"
)

// TestCommitIDs: ids are stable (a retry finds its rows), differ by domain
// and by every field, and are not the ids of earlier releases (which are
// kept for loads retried across an upgrade).
func TestCommitIDs(t *testing.T) {
	f := jobs.FileRef{Path: "a.csv", ETag: "e1"}
	ids := map[uint64]string{}
	add := func(name string, id uint64) {
		t.Helper()
		if id&1 == 0 {
			t.Errorf("%s: id %x is even (0 means none)", name, id)
		}
		if other, ok := ids[id]; ok {
			t.Errorf("%s and %s share id %x", name, other, id)
		}
		ids[id] = name
	}
	add("file", FileCommit("w", "s", "p", f))
	add("file, other etag", FileCommit("w", "s", "p", jobs.FileRef{Path: "a.csv", ETag: "e2"}))
	add("file, fields shifted", FileCommit("w", "s", "pa.csv", jobs.FileRef{Path: "", ETag: "e1"}))
	add("kafka", KafkaCommit("w", "s", "p", 1, []jobs.PartitionOffset{{Partition: 0, Offset: 5}}))
	add("kafka, other generation", KafkaCommit("w", "s", "p", 2, []jobs.PartitionOffset{{Partition: 0, Offset: 5}}))
	add("flush", FlushIDCommit("sess", "f1"))
	add("flush, other id", FlushIDCommit("sess", "f2"))
	add("legacy file", LegacyFileCommit("w", "s", "p", f))
	add("legacy flush", LegacyFlushCommit("sess", "f1"))
	if FileCommit("w", "s", "p", f) != FileCommit("w", "s", "p", f) {
		t.Error("the same load got two ids")
	}
}
