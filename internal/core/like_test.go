package core

import (
	"testing"
)

func TestLike(t *testing.T) {
	tests := []struct {
		p, s string
		want bool
	}{
		{"sales%", "sales_ods", true},
		{"sales%", "SALES_ODS", true},
		{"%ods", "sales_ods", true},
		{"s_les", "sales", true},
		{"s_les", "sles", false},
		{"pipe_kafka_logs", "pipe_kafka_logs", true},
		{`a\_b`, "a_b", true},
		{`a\_b`, "axb", false},
		{"%", "", true},
	}
	for _, tt := range tests {
		if got := LikeMatch(&tt.p, tt.s); got != tt.want {
			t.Errorf("like(%q, %q) = %v", tt.p, tt.s, got)
		}
	}
}
