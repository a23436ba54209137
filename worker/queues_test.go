package worker

import "testing"

func TestQueuesOf(t *testing.T) {
	for _, tt := range []struct {
		in             []string
		control, loads bool
		bad            bool
	}{
		{nil, true, true, false},
		{[]string{"control", "loads"}, true, true, false},
		{[]string{"control"}, true, false, false},
		{[]string{" Loads "}, false, true, false},
		{[]string{"control", "copies"}, false, false, true},
	} {
		c, l, err := queuesOf(tt.in)
		if (err != nil) != tt.bad || c != tt.control || l != tt.loads {
			t.Errorf("queuesOf(%q) = %v, %v, %v; want %v, %v, error %v", tt.in, c, l, err, tt.control, tt.loads, tt.bad)
		}
	}
}
