// Package formats opens the files lakepipe loads and picks their reader
// (Open): CSV and newline-delimited JSON (package textfile), Parquet and
// Arrow IPC (here), each possibly gzip- or zstd-compressed, and writes
// Parquet. Readers stream: memory stays bounded by the batch size and
// rowio.Limits, not the file size. It is the one set of readers used by
// COPY, SELECT FROM VOLUME, pipes and streaming writes alike; what they
// share with their callers is in package rowio.
package formats
