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
	add("file", FileCommit("w", "s", "p", 1, f))
	add("file, other etag", FileCommit("w", "s", "p", 1, jobs.FileRef{Path: "a.csv", ETag: "e2"}))
	add("file, fields shifted", FileCommit("w", "s", "pa.csv", 1, jobs.FileRef{Path: "", ETag: "e1"}))
	add("file, other generation", FileCommit("w", "s", "p", 2, f))
	from := []jobs.PartitionOffset{{Partition: 0, Offset: 5}}
	add("kafka", KafkaCommit("w", "s", "p", 1, 0, from))
	add("kafka, other generation", KafkaCommit("w", "s", "p", 2, 0, from))
	add("kafka, after a reset", KafkaCommit("w", "s", "p", 1, 1, from))
	add("kafka, after two resets", KafkaCommit("w", "s", "p", 1, 2, from))
	// 0x352741d3918f3d0b: KafkaCommit("w", "s", "p", 1, from) of the releases
	// before offset epochs, computed by that code: a batch retried across
	// the upgrade keeps its id.
	if got := KafkaCommit("w", "s", "p", 1, 0, from); got != 0x352741d3918f3d0b {
		t.Errorf("KafkaCommit in epoch 0 = %#x, want the id of the releases before", got)
	}
	add("flush", FlushIDCommit("sess", "f1"))
	add("flush, other id", FlushIDCommit("sess", "f2"))
	earlier := EarlierFileCommits("w", "s", "p", f)
	// 0x39b4c98aa78bdc2f: FileCommit("w", "s", "p", f) of the releases
	// from 2026-12-04 to 2026-12-07, computed by that code.
	if len(earlier) != 2 || earlier[0] != 0x39b4c98aa78bdc2f || earlier[1] != LegacyFileCommit("w", "s", "p", f) {
		t.Fatalf("EarlierFileCommits = %x, want the ids of the releases before", earlier)
	}
	add("file, no generation (2026-12-04)", earlier[0])
	add("legacy file", earlier[1])
	add("legacy flush", LegacyFlushCommit("sess", "f1"))
	if FileCommit("w", "s", "p", 1, f) != FileCommit("w", "s", "p", 1, f) {
		t.Error("the same load got two ids")
	}
}

// TestPipeOwner: an owner names its pipe whatever characters the names
// hold, and what is not an owner (marks of other writers, text written
// by hand) reads as none.
func TestPipeOwner(t *testing.T) {
	for _, o := range []LoadOwner{
		{Schema: "public", Pipe: "p", Generation: 1},
		{Schema: `we"ird.schema`, Pipe: "p:with:colons\x00", Generation: -5},
		{Schema: "", Pipe: "日本", Generation: 1764979200123456789},
	} {
		got, ok := ParseOwner(PipeOwner(o.Schema, o.Pipe, o.Generation))
		if !ok || got != o {
			t.Errorf("ParseOwner(PipeOwner(%+v)) = %+v, %v", o, got, ok)
		}
	}
	if got, ok := ParseOwner(`{"lease":"host/42/ab"}`); !ok || got != (LoadOwner{Lease: "host/42/ab"}) {
		t.Errorf("ParseOwner of a writer lease = %+v, %v", got, ok)
	}
	for _, s := range []string{"", "{}", `{"pipe":"p"}`, `{"generation":3}`, "pipe:1:s.p", "null", `{"pipe":1}`,
		`{"lease":""}`, `{"lease":"l","pipe":"p","generation":1}`} {
		if o, ok := ParseOwner(s); ok {
			t.Errorf("ParseOwner(%q) = %+v, want none", s, o)
		}
	}
}
