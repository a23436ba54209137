// Command lakepipe-kafka runs franz-go's kfake, an in-process fake Kafka
// cluster, as a standalone single-broker server for the local stack and CI.
// It listens on 127.0.0.1 only and keeps its topics, offsets and groups in a
// data directory so that a restart (as fault-injection tests do) loses nothing.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func main() {
	log.SetFlags(log.LstdFlags | log.LUTC)
	log.SetPrefix("lakepipe-kafka: ")

	defPort := 19092
	if s := os.Getenv("LAKEPIPE_KAFKA_PORT"); s != "" {
		p, err := strconv.Atoi(s)
		if err != nil {
			log.Fatalf("LAKEPIPE_KAFKA_PORT=%q is not a port number", s)
		}
		defPort = p
	}
	port := flag.Int("port", defPort, "TCP port to listen on at 127.0.0.1 (default from LAKEPIPE_KAFKA_PORT)")
	dataDir := flag.String("data-dir", "", "directory to persist the cluster's state in; empty keeps everything in memory")
	partitions := flag.Int("partitions", 1, "number of partitions of auto-created topics and of CreateTopics requests asking for the default (-1)")
	autoCreate := flag.Bool("auto-create-topics", true, "create unknown topics when a client's metadata request asks to")
	syncWrites := flag.Bool("sync-writes", false, "fsync every produced batch (slower; survives machine crashes, not only process kills)")
	seed := flag.String("topics", "", "comma-separated topics to create at start when missing (with --partitions partitions)")
	logLevel := flag.String("log-level", "warn", "kfake log level: none, error, warn, info, debug")
	createOnly := flag.Bool("create-only", false, "do not serve: create the --topics on the server already listening on --port, then exit")
	flag.Parse()

	if *createOnly {
		// For start.sh, when a topic is needed on a cluster that is already up.
		addr := fmt.Sprintf("127.0.0.1:%d", *port)
		if err := createTopics([]string{addr}, strings.Split(*seed, ","), int32(*partitions)); err != nil {
			log.Fatalf("creating --topics on %s: %v", addr, err)
		}
		return
	}

	level, ok := map[string]kfake.LogLevel{
		"none": kfake.LogLevelNone, "error": kfake.LogLevelError, "warn": kfake.LogLevelWarn,
		"info": kfake.LogLevelInfo, "debug": kfake.LogLevelDebug,
	}[strings.ToLower(*logLevel)]
	if !ok {
		log.Fatalf("unknown --log-level %q (want none, error, warn, info or debug)", *logLevel)
	}
	if *port <= 0 || *port > 65535 {
		log.Fatalf("--port %d is out of range", *port)
	}
	if *partitions < 1 {
		log.Fatalf("--partitions must be at least 1, got %d", *partitions)
	}

	// Ports(port) makes kfake run exactly one broker on that port; clients
	// bootstrap from it and the metadata they get back names the same address.
	opts := []kfake.Opt{
		kfake.Ports(*port),
		kfake.ClusterID("lakepipe-local"),
		kfake.DefaultNumPartitions(*partitions),
		kfake.WithLogger(kfake.BasicLogger(os.Stderr, level)),
	}
	if *autoCreate {
		opts = append(opts, kfake.AllowAutoTopicCreation())
	}
	if *dataDir != "" {
		opts = append(opts, kfake.DataDir(*dataDir))
	}
	if *syncWrites {
		opts = append(opts, kfake.SyncWrites())
	}

	c, err := kfake.NewCluster(opts...)
	if err != nil {
		log.Fatalf("starting the fake Kafka cluster: %v", err)
	}
	persist := "in memory only"
	if *dataDir != "" {
		persist = "persisting to " + *dataDir
	}
	log.Printf("listening on %s (%s, %d default partitions, auto topic creation %v)",
		strings.Join(c.ListenAddrs(), ","), persist, *partitions, *autoCreate)
	if *seed != "" {
		if err := createTopics(c.ListenAddrs(), strings.Split(*seed, ","), int32(*partitions)); err != nil {
			c.Close()
			log.Fatalf("creating --topics: %v", err)
		}
	}

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	s := <-sigs
	log.Printf("got %v, shutting down", s)
	// Close flushes the persisted state before returning.
	c.Close()
	log.Printf("stopped")
}

// createTopics makes sure the named topics exist, through an ordinary Kafka
// client against the cluster itself. kfake.SeedTopics would only apply to a
// fresh data directory, and clients such as versitygw's event writer do not
// ask for auto creation, so the topic has to exist before they start.
func createTopics(addrs, topics []string, partitions int32) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	for _, t := range topics {
		if t = strings.TrimSpace(t); t == "" {
			continue
		}
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic = t
		rt.NumPartitions = partitions
		rt.ReplicationFactor = 1
		req.Topics = append(req.Topics, rt)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, rt := range resp.Topics {
		err := kerr.ErrorForCode(rt.ErrorCode)
		switch {
		case err == nil:
			log.Printf("created topic %s with %d partitions", rt.Topic, partitions)
		case errors.Is(err, kerr.TopicAlreadyExists):
		default:
			return fmt.Errorf("topic %s: %w", rt.Topic, err)
		}
	}
	return nil
}
