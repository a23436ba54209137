module github.com/lakepipe/lakepipe/deploy/local/kafka

// franz-go and kmsg are raised above what this kfake snapshot declares
// (v1.21.7 / v1.14.0): its code calls kversion APIs that first appear in
// franz-go v1.22.x, and the main module uses franz-go v1.22.3 too.

go 1.26.8

require (
	github.com/twmb/franz-go v1.22.3
	github.com/twmb/franz-go/pkg/kfake v0.0.0-20260918054303-01f206a7e32c
	github.com/twmb/franz-go/pkg/kmsg v1.15.1
)

require (
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/pierrec/lz4/v4 v4.1.33 // indirect
)
