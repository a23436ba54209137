package kafkaload

import (
	"testing"

	"github.com/lakepipe/lakepipe/internal/jobs"
)

func TestBehind(t *testing.T) {
	offs := func(o ...int64) []jobs.PartitionOffset {
		out := make([]jobs.PartitionOffset, len(o))
		for i, v := range o {
			out[i] = jobs.PartitionOffset{Partition: int32(i), Offset: v}
		}
		return out
	}
	for _, c := range []struct {
		name     string
		from, at []jobs.PartitionOffset
		want     bool
	}{
		{"the next batch starts where the last ended", offs(5, 7), offs(5, 7), false},
		{"a batch the pipe went past", offs(3, 7), offs(5, 7), true},
		{"every partition short", offs(0, 0), offs(5, 7), true},
		{"one partition past the position", offs(3, 9), offs(5, 7), false},
		{"a partition the position does not know", offs(3, 7, 0), offs(5, 7), false},
		{"a partition added since the batch", offs(3), offs(5, 7), true},
		{"no position", offs(3), nil, false},
		{"no offsets", nil, offs(5), false},
	} {
		if got := behind(c.from, c.at); got != c.want {
			t.Errorf("%s: behind(%v, %v) = %v, want %v", c.name, c.from, c.at, got, c.want)
		}
	}
}
