// Package tunnel is the Go client of lakepipe's streaming-write service,
// Tunnel Stream: rows written through a RecordPack are visible to queries
// the moment its Flush returns, without a commit. It speaks the HTTP API
// of wire.go: JSON to open and close sessions, Arrow IPC stream bodies,
// compressed, to flush rows.
//
// The flow mirrors the MaxCompute Tunnel SDKs: open a StreamUploadSession
// on a table, make a RecordPack, append records, flush; a pack is reused
// after each flush and a session may have many packs. A pack also flushes
// by itself when it holds about 64 MiB (RecordPackOptions.FlushThreshold).
// Flushes are exactly-once: each carries a flush id, retries reuse it and
// the server writes a flush id once, so a flush that failed ambiguously
// (a timeout, a lost answer) can be retried safely. After a schema change
// of the table, flushes fail with ErrSchemaMismatch and the session must
// be rebuilt.
//
// The Go SDK's example, in this package:
//
//	c, err := tunnel.New("http://127.0.0.1:8090", tunnel.WithToken(token))
//	if err != nil { … }
//	session, err := c.CreateStreamUploadSession(ctx, "", "my_table",
//		tunnel.WithPartitionKey("dt=20231001"),
//		tunnel.WithCreatePartition(),
//	)
//	if err != nil { … }
//	pack, err := session.OpenRecordPackWriter()
//	if err != nil { … }
//	if err := pack.AppendRow(int64(1), "hello"); err != nil { … }
//
//	// flush 后数据即可见: the rows are visible once Flush returns.
//	res, err := pack.Flush()
//	if tunnel.IsSchemaMismatch(err) {
//		// The table changed: rebuild the session and write the rows again.
//		session, err = c.CreateStreamUploadSession(ctx, "", "my_table")
//		…
//	}
//	fmt.Printf("traceId=%s, records=%d, bytes=%d\n", res.TraceID, res.RecordCount, res.FlushSize)
//
// and the Java SDK's, with the builder and records set by column name:
//
//	session, err := c.BuildStreamUploadSession("", "users").Build(ctx)
//	pack, err := session.NewRecordPack()
//	for i := 0; i < 1000; i++ {
//		record := session.NewRecord()
//		record.SetString("name", fmt.Sprintf("user_%d", i))
//		record.SetBigint("age", int64(20+i%50))
//		if err := pack.Append(record); err != nil { … }
//	}
//	res, err := pack.Flush(tunnel.FlushOption{Timeout: 3 * time.Second})
//
// Setters return an error, and a record also remembers its first one:
// Append refuses a record with a bad value even when the setter's error
// went unchecked. AppendRow, which takes a row's values in column order,
// is the faster way in; neither allocates per value.
//
// Flush bodies are not compressed by default (DefaultCompression says
// why); deflate (zlib, the SDKs' default), snappy and lz4 can be chosen
// per session (SetCompressor, WithCompressor) or per pack
// (RecordPackOptions.Compression).
package tunnel
