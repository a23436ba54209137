//go:build integration

package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kafkaAddr is the local Kafka protocol server (kfake, deploy/local).
var kafkaAddr = env("LAKEPIPE_KAFKA_ADDR", "127.0.0.1:"+env("LAKEPIPE_KAFKA_PORT", "19092"))

// kafkaClient is a producer/admin client of the local Kafka, closed at the
// end of the test.
func kafkaClient(tb testing.TB, opts ...kgo.Opt) *kgo.Client {
	tb.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(kafkaAddr), kgo.ProducerLinger(5 * time.Millisecond),
		kgo.ProducerBatchMaxBytes(1 << 20)}, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(cl.Close)
	return cl
}

// kafkaTopic creates a topic with n partitions (it may exist already, as
// the ClickZetta documentation's fixed topic names do across runs) and returns a producer.
func kafkaTopic(tb testing.TB, topic string, partitions int32) *kgo.Client {
	tb.Helper()
	cl := kafkaClient(tb, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic)
	if err != nil && !strings.Contains(err.Error(), "TOPIC_ALREADY_EXISTS") {
		tb.Fatalf("the local Kafka is needed (deploy/local/start.sh kafka): create topic %s: %v", topic, err)
	}
	if resp.Err != nil && !strings.Contains(resp.Err.Error(), "TOPIC_ALREADY_EXISTS") {
		tb.Fatalf("create topic %s: %v", topic, resp.Err)
	}
	return cl
}

// produce sends values (keys k0, k1, …) and waits until all are acknowledged.
func produce(tb testing.TB, cl *kgo.Client, values ...string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	recs := make([]*kgo.Record, len(values))
	for i, v := range values {
		recs[i] = &kgo.Record{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(v)}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		tb.Fatalf("produce: %v", err)
	}
}
