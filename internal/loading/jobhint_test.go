package loading

import (
	"strings"
	"testing"
)

func TestParseCopyJobHint(t *testing.T) {
	tests := []struct {
		in      string
		want    CopyJobHint
		wantErr string
	}{
		{in: "", want: CopyJobHint{}},
		{in: `{}`, want: CopyJobHint{}},
		{in: `{"parallelism": 8}`, want: CopyJobHint{Parallelism: 8}},
		{in: `{"parallelism": "2", "max_file_size": "10GB"}`, want: CopyJobHint{Parallelism: 2, MaxFileSize: 10 << 30}},
		{in: `{"MAX_FILE_SIZE": 1048576}`, want: CopyJobHint{MaxFileSize: 1 << 20}},
		{in: `{"max_file_size": "512 kb"}`, want: CopyJobHint{MaxFileSize: 512 << 10}},
		{in: `{"parallelism": 0}`, wantErr: "from 1 to 32"},
		{in: `{"parallelism": 33}`, wantErr: "from 1 to 32"},
		{in: `{"parallelism": 1.5}`, wantErr: "whole number"},
		{in: `{"max_file_size": "-1"}`, wantErr: "positive size"},
		{in: `{"max_file_size": "9999999TB"}`, wantErr: "positive size"},
		{in: `{"cz.sql.split.kafka.strategy": "size"}`, wantErr: `key "cz.sql.split.kafka.strategy" means nothing`},
		{in: `parallelism=2`, wantErr: "JSON object"},
		{in: `[1, 2]`, wantErr: "JSON object"},
		{in: `null`, wantErr: "JSON object"},
	}
	for _, tt := range tests {
		got, err := ParseCopyJobHint(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseCopyJobHint(%q) error %v, want one saying %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseCopyJobHint(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func FuzzParseCopyJobHint(f *testing.F) {
	f.Add(`{"parallelism": 8, "max_file_size": "10GB"}`)
	f.Add(`{"max_file_size": 1}`)
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseCopyJobHint(s)
		if err == nil && (h.Parallelism < 0 || h.Parallelism > MaxHintParallelism || h.MaxFileSize < 0) {
			t.Fatalf("ParseCopyJobHint(%q) = %+v: out of range", s, h)
		}
	})
}

func TestParseEventQueue(t *testing.T) {
	for _, tc := range []struct {
		in, topic, err string
		brokers        int
	}{
		{in: "kafka://k1:9092/s3events", topic: "s3events", brokers: 1},
		{in: "kafka://k1:9092,k2:9092/ev", topic: "ev", brokers: 2},
		{in: "https://sqs.eu-west-1.amazonaws.com/123456789012/s3events"},
		{in: "http://127.0.0.1:4100/100010001000/q"},
		{in: "kafka://k1:9092/", err: "kafka://host:port"},
		{in: "kafka:///topic", err: "kafka://host:port"},
		{in: "kafka://k/a/b", err: "kafka://host:port"},
		{in: "sqs://queue", err: "SQS queue URL"},
		{in: "https://sqs.amazonaws.com/", err: "SQS queue URL"},
		{in: "", err: "SQS queue URL"},
	} {
		q, err := ParseEventQueue(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseEventQueue(%q) error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || q.Topic != tc.topic || len(q.Brokers) != tc.brokers || q.IsKafka() != (tc.topic != "") {
			t.Errorf("ParseEventQueue(%q) = %+v, %v", tc.in, q, err)
		}
	}
}
