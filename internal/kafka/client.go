package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Offsets maps a partition to the offset of the next record to read.
type Offsets map[int32]int64

// Sorted returns the partitions in order.
func (o Offsets) Sorted() []int32 {
	ps := make([]int32, 0, len(o))
	for p := range o {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}

// Client talks to the brokers of one Source. It does not join the consumer
// group: lakepipe assigns partitions itself, from offsets its workflow keeps.
type Client struct {
	src Source
	st  *settings
	cl  *kgo.Client
	adm *kadm.Client
	key [32]byte // in a Pool
	// cons reads records; it is made by the first Read and kept for the
	// next ones (see Pool), assigned the partitions of each Read.
	cons     *kgo.Client
	assigned []int32
}

// Open prepares a client; connections are made on first use.
func Open(src Source) (*Client, error) {
	st, err := src.settings()
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(st.opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka %s: %w", strings.Join(src.Bootstrap, ","), err)
	}
	return &Client{src: src, st: st, cl: cl, adm: kadm.NewClient(cl), key: src.key()}, nil
}

// Close ends the client's connections.
func (c *Client) Close() {
	if c.cons != nil {
		c.cons.Close()
	}
	c.cl.Close()
}

// MaxPollRecords is the most records one turn reads (max.poll.records).
func (c *Client) MaxPollRecords() int { return c.st.maxPollRecords }

func (c *Client) wrap(what string, err error) error {
	return fmt.Errorf("kafka topic %s at %s: %s: %w", c.src.Topic, strings.Join(c.src.Bootstrap, ","), what, err)
}

func (c *Client) listed(ctx context.Context, what string, list func(context.Context, ...string) (kadm.ListedOffsets, error)) (Offsets, error) {
	lo, err := list(ctx, c.src.Topic)
	if err != nil {
		return nil, c.wrap(what, err)
	}
	if err := lo.Error(); err != nil {
		if errors.Is(err, kerr.UnknownTopicOrPartition) {
			return nil, c.wrap(what, fmt.Errorf("the topic does not exist (create it, or check the topic name)"))
		}
		return nil, c.wrap(what, err)
	}
	out := Offsets{}
	lo.Each(func(l kadm.ListedOffset) {
		if l.Topic == c.src.Topic {
			out[l.Partition] = l.Offset
		}
	})
	if len(out) == 0 {
		return nil, c.wrap(what, fmt.Errorf("the topic does not exist or has no partitions"))
	}
	return out, nil
}

// EndOffsets returns, per partition, the offset after the last record a
// read may see (the last stable offset with isolation.level read_committed).
func (c *Client) EndOffsets(ctx context.Context) (Offsets, error) {
	if c.st.readCommitted {
		return c.listed(ctx, "list end offsets", c.adm.ListCommittedOffsets)
	}
	return c.listed(ctx, "list end offsets", c.adm.ListEndOffsets)
}

// StartOffsets returns, per partition, the offset of its oldest record.
func (c *Client) StartOffsets(ctx context.Context) (Offsets, error) {
	return c.listed(ctx, "list start offsets", c.adm.ListStartOffsets)
}

// ResetOffsets says where RESET_KAFKA_GROUP_OFFSETS moves a pipe: the
// beginning ('earliest') or the end ('latest') of each partition, or its
// first record at or after a time in epoch milliseconds (the end of a
// partition with none that late).
func (c *Client) ResetOffsets(ctx context.Context, to string) (Offsets, error) {
	switch strings.ToLower(strings.TrimSpace(to)) {
	case "earliest":
		return c.StartOffsets(ctx)
	case "latest":
		return c.EndOffsets(ctx)
	}
	ms, err := ParseResetMillis(to)
	if err != nil {
		return nil, err
	}
	return c.listed(ctx, "list offsets at "+to, func(ctx context.Context, topics ...string) (kadm.ListedOffsets, error) {
		return c.adm.ListOffsetsAfterMilli(ctx, ms, topics...)
	})
}

// ParseResetMillis checks a RESET_KAFKA_GROUP_OFFSETS value that is not
// 'earliest' or 'latest'.
func ParseResetMillis(to string) (int64, error) {
	ms, err := strconv.ParseInt(strings.TrimSpace(to), 10, 64)
	if err != nil || ms < 0 {
		return 0, fmt.Errorf("RESET_KAFKA_GROUP_OFFSETS = %q: expected 'earliest', 'latest' or a time in epoch milliseconds", to)
	}
	return ms, nil
}

// InitialOffsets says where a new pipe starts: the group's committed
// offsets where it has them (a pipe re-created on the same group goes on
// where the last one stopped), else the beginning of each partition, or its
// end with auto.offset.reset = latest.
func (c *Client) InitialOffsets(ctx context.Context) (Offsets, error) {
	var out Offsets
	var err error
	if c.st.resetLatest {
		out, err = c.EndOffsets(ctx)
	} else {
		out, err = c.StartOffsets(ctx)
	}
	if err != nil {
		return nil, err
	}
	if c.src.Group == "" {
		return out, nil
	}
	resp, err := c.adm.FetchOffsetsForTopics(ctx, c.src.Group, c.src.Topic)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return out, nil // a group nobody committed to yet
	}
	if err != nil {
		return nil, c.wrap("fetch the offsets of group "+c.src.Group, err)
	}
	resp.Each(func(r kadm.OffsetResponse) {
		if r.Err == nil && r.Topic == c.src.Topic && r.At >= 0 {
			if _, ok := out[r.Partition]; ok {
				out[r.Partition] = r.At
			}
		}
	})
	return out, nil
}

// CommitGroup records offsets as the group's committed offsets, so that
// kafka-consumer-groups and other tools show the pipe's position and lag.
// The pipe itself never reads them back while it runs.
func (c *Client) CommitGroup(ctx context.Context, off Offsets) error {
	if c.src.Group == "" || len(off) == 0 {
		return nil
	}
	var os kadm.Offsets
	for p, o := range off {
		os.AddOffset(c.src.Topic, p, o, -1)
	}
	resp, err := c.adm.CommitOffsets(ctx, c.src.Group, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return c.wrap("commit the offsets of group "+c.src.Group, err)
	}
	return nil
}

// consumer returns the client's consumer, reading assign: the consumer of
// the last Read reassigned (which drops what it fetched beyond that Read's
// end), else a new one.
func (c *Client) consumer(assign map[int32]kgo.Offset) (*kgo.Client, error) {
	if c.cons != nil {
		c.cons.RemoveConsumePartitions(map[string][]int32{c.src.Topic: c.assigned})
		c.cons.AddConsumePartitions(map[string]map[int32]kgo.Offset{c.src.Topic: assign})
	} else {
		// kgo's fetch sizes (Kafka's defaults, 1 MiB per partition) unless
		// the pipe's map sets them: 4 MiB read a 1 M-record backlog from
		// the local Kafka server 2-3 times slower than 1 MiB (measured
		// 2026-12-03).
		opts := append([]kgo.Opt{}, c.st.opts...)
		opts = append(opts,
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{c.src.Topic: assign}),
			// A partition whose offset is out of range (retention removed
			// it) resumes at its oldest record: the gap is the broker's
			// doing.
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		cons, err := kgo.NewClient(opts...)
		if err != nil {
			return nil, err
		}
		c.cons = cons
	}
	c.assigned = c.assigned[:0]
	for p := range assign {
		c.assigned = append(c.assigned, p)
	}
	return c.cons, nil
}

// Read calls fn for the records from `from` up to (not including) `until`,
// at most max of them, partition by partition in offset order (partitions
// interleave). It returns the offsets after the last record handed to fn.
// A partition that gets no records for stall (the end of a compacted
// partition, transaction markers) ends where it is.
func (c *Client) Read(ctx context.Context, from, until Offsets, max int, fn func(*kgo.Record) error) (Offsets, error) {
	next := Offsets{}
	assign := map[int32]kgo.Offset{}
	for p, o := range from {
		next[p] = o
		if u, ok := until[p]; ok && o < u {
			assign[p] = kgo.NewOffset().At(o)
		}
	}
	if len(assign) == 0 || max <= 0 {
		return next, nil
	}
	cons, err := c.consumer(assign)
	if err != nil {
		return next, c.wrap("consume", err)
	}

	// kgo issues the next fetch only once the last one has been polled; a
	// poller of its own lets the broker serve (and kgo decode) the next
	// fetch while fn works on this one.
	pctx, stopPolling := context.WithCancel(ctx)
	fetches := make(chan kgo.Fetches, 1)
	polled := make(chan struct{})
	// The consumer outlives this Read: its poller must be gone before the
	// next Read assigns it, or it would take that Read's records.
	defer func() {
		stopPolling()
		<-polled
	}()
	go func() {
		defer close(polled)
		defer close(fetches)
		for pctx.Err() == nil {
			wctx, cancel := context.WithTimeout(pctx, time.Second)
			fs := cons.PollFetches(wctx)
			cancel()
			select {
			case fetches <- fs:
			case <-pctx.Done():
				return
			}
		}
	}()

	open := len(assign)
	n := 0
	const stall = 3 * time.Second
	lastProgress := time.Now()
	for fs := range fetches {
		if err := ctx.Err(); err != nil {
			return next, err
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				return
			}
			if ferr == nil {
				ferr = c.wrap(fmt.Sprintf("fetch partition %d", p), err)
			}
		})
		if ferr != nil {
			return next, ferr
		}
		progressed := false
		var stop error
		fs.EachRecord(func(r *kgo.Record) {
			if stop != nil || n >= max {
				return
			}
			u := until[r.Partition]
			if r.Offset < next[r.Partition] || r.Offset >= u {
				return
			}
			if err := fn(r); err != nil {
				stop = err
				return
			}
			n++
			progressed = true
			next[r.Partition] = r.Offset + 1
			if next[r.Partition] >= u {
				open--
			}
		})
		if stop != nil {
			return next, stop
		}
		if open == 0 || n >= max {
			break
		}
		if progressed {
			lastProgress = time.Now()
		} else if time.Since(lastProgress) > stall {
			break
		}
	}
	if err := ctx.Err(); err != nil {
		return next, err
	}
	return next, nil
}
