// Package kafkaload loads Kafka pipes: it compiles a pipe's
// COPY INTO … FROM (SELECT … FROM READ_KAFKA(…)) into a record program
// (package recordeval) and a target, answers where a new pipe starts and
// where a batch ends, and loads one batch — the records between fixed
// offsets — exactly once under a commit id derived from the pipe, its
// generation and the batch's start offsets. Records the program rejects
// are counted against the pipe's max_errors. It keeps one Kafka client per
// pipe between batches (kafka.Pool).
//
// The offsets themselves live in the pipe's workflow, not here; this
// package must not import the engine or the workflows.
package kafkaload
