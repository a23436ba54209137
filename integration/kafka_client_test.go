//go:build integration

package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lakepipe/lakepipe/internal/kafka"
)

// TestKafkaReadGoesOn reads a topic in many small Reads, as a pipe's
// batches do, while records keep arriving: a Read that starts where the
// last one ended goes on with the consumer and the records it had fetched
// beyond that end (kafka.Client.left); every offset must come once, in
// order, with its own value. A Read
// from elsewhere (a rewind, as a retried batch or a reset does) must give
// the records at its offsets again.
func TestKafkaReadGoesOn(t *testing.T) {
	id := fmt.Sprintf("%d", time.Now().UnixNano())
	topic := "readon_" + id
	prod := kafkaTopic(t, topic, 3)
	vals := func(from, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("value %d of %s", from+i, id)
		}
		return out
	}
	produce(t, prod, vals(0, 3000)...)
	produced := 3000

	cl, err := kafka.Open(kafka.Source{Bootstrap: []string{kafkaAddr}, Topic: topic, Group: "readon_group_" + id})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start, err := cl.StartOffsets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		offset int64
		value  string
	}
	byPart := map[int32][]got{}
	seen := map[string]bool{}
	read := func(from, until kafka.Offsets, max int, into map[int32][]got) kafka.Offsets {
		t.Helper()
		next, err := cl.Read(ctx, from, until, max, func(r *kgo.Record) error {
			into[r.Partition] = append(into[r.Partition], got{r.Offset, string(r.Value)})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return next
	}
	from := start
	for round := 0; ; round++ {
		end, err := cl.EndOffsets(ctx)
		if err != nil {
			t.Fatal(err)
		}
		next := read(from, end, 137, byPart)
		// Each Read after the first goes on where the last ended.
		if want := map[bool]string{true: kafka.BeganNew, false: kafka.BeganContinued}[round == 0]; cl.Began() != want {
			t.Fatalf("Read %d began %q, want %q", round, cl.Began(), want)
		}
		if round%5 == 4 && produced < 4000 {
			produce(t, prod, vals(produced, 50)...) // beyond this Read's end
			produced += 50
		}
		from = next
		total := 0
		for _, rs := range byPart {
			total += len(rs)
		}
		if total >= produced {
			break
		}
		if round > 200 {
			t.Fatalf("after %d Reads, %d of %d records", round, total, produced)
		}
	}
	total := 0
	for p, rs := range byPart {
		for i, r := range rs {
			if want := start[p] + int64(i); r.offset != want {
				t.Fatalf("partition %d: record %d has offset %d, want %d (a record lost or repeated)", p, i, r.offset, want)
			}
			if seen[r.value] {
				t.Fatalf("value %q read twice", r.value)
			}
			seen[r.value] = true
		}
		total += len(rs)
	}
	t.Logf("%d records in %d partitions read in small Reads", total, len(byPart))
	if total != produced || len(seen) != produced {
		t.Fatalf("%d records read (%d distinct values), %d produced", total, len(seen), produced)
	}

	// A rewind: the first records again, not what the consumer holds.
	again := map[int32][]got{}
	end, err := cl.EndOffsets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	read(start, end, 200, again)
	if cl.Began() != kafka.BeganReassigned {
		t.Fatalf("the rewound Read began %q, want %q", cl.Began(), kafka.BeganReassigned)
	}
	n := 0
	for p, rs := range again {
		for i, r := range rs {
			if r != byPart[p][i] {
				t.Fatalf("rewound read, partition %d record %d: %+v, want %+v", p, i, r, byPart[p][i])
			}
		}
		n += len(rs)
	}
	if n != 200 {
		t.Fatalf("rewound read gave %d records, want 200", n)
	}
}
