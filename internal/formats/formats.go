// Package formats reads and writes the file formats lakepipe loads and exports:
// CSV, newline-delimited JSON and Parquet, each possibly gzip- or
// zstd-compressed. Readers stream: memory stays bounded by the batch size,
// not the file size. It is the one set of readers used by COPY, SELECT FROM
// VOLUME, pipes and streaming writes alike.
package formats
