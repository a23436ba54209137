package tunnel_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/lakepipe/lakepipe/tunnel"
)

// The Go SDK's example of the ClickZetta documentation's example: a session on a partition, a pack,
// one row, a flush after which the row is visible.
func Example() {
	ctx := context.Background()
	c, err := tunnel.New("http://127.0.0.1:8090", tunnel.WithToken("<token>"))
	if err != nil {
		log.Fatal(err)
	}
	session, err := c.CreateStreamUploadSession(ctx, "", "my_table",
		tunnel.WithPartitionKey("dt=20231001"),
		tunnel.WithCreatePartition(),
	)
	if err != nil {
		log.Fatal(err)
	}
	pack, err := session.OpenRecordPackWriter()
	if err != nil {
		log.Fatal(err)
	}
	if err := pack.AppendRow(int64(1), "hello"); err != nil {
		log.Fatal(err)
	}
	// flush 后数据即可见: visible once Flush returns.
	res, err := pack.Flush()
	if tunnel.IsSchemaMismatch(err) {
		// The table changed: rebuild the session, write the rows again.
		session, err = c.CreateStreamUploadSession(ctx, "", "my_table")
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("traceId=%s, records=%d, bytes=%d\n", res.TraceID, res.RecordCount, res.FlushSize)
}

// The Java SDK's example: the builder, records set by column name, a flush
// with a timeout.
func ExampleClient_BuildStreamUploadSession() {
	ctx := context.Background()
	c, err := tunnel.New("http://127.0.0.1:8090", tunnel.WithToken("<token>"))
	if err != nil {
		log.Fatal(err)
	}
	session, err := c.BuildStreamUploadSession("", "users").
		AllowSchemaMismatch(false). // strict, the default
		Build(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close(ctx)
	pack, err := session.NewRecordPack(tunnel.RecordPackOptions{Compression: tunnel.CompressSnappy})
	if err != nil {
		log.Fatal(err)
	}
	record := session.NewRecord()
	for i := 0; i < 1000; i++ {
		record.Reset()
		record.SetString("name", fmt.Sprintf("user_%d", i))
		record.SetBigint("age", int64(20+i%50))
		if err := pack.Append(record); err != nil { // refuses a record whose setter failed
			log.Fatal(err)
		}
	}
	res, err := pack.Flush(tunnel.FlushOption{Timeout: 3 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("recordCount:", res.RecordCount, "flushSize:", res.FlushSize)
}
