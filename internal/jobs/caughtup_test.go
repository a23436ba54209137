package jobs

import "testing"

func TestCaughtUp(t *testing.T) {
	po := func(pairs ...int64) []PartitionOffset {
		var out []PartitionOffset
		for i := 0; i+1 < len(pairs); i += 2 {
			out = append(out, PartitionOffset{Partition: int32(pairs[i]), Offset: pairs[i+1]})
		}
		return out
	}
	for _, c := range []struct {
		name         string
		offsets, end []PartitionOffset
		want         bool
	}{
		{"at the ends", po(0, 5, 1, 3), po(0, 5, 1, 3), true},
		{"records on one partition", po(0, 5, 1, 3), po(0, 5, 1, 4), false},
		{"ends behind the offsets (a reset, an old read)", po(0, 5, 1, 3), po(0, 4, 1, 3), true},
		{"a partition added to the topic, empty", po(0, 5), po(0, 5, 1, 0), false},
		{"no ends read", po(0, 5), nil, false},
		{"no offsets yet", nil, po(0, 0), false},
	} {
		if got := CaughtUp(c.offsets, c.end); got != c.want {
			t.Errorf("%s: CaughtUp = %v, want %v", c.name, got, c.want)
		}
	}
}
