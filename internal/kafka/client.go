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
	// After a Read that ended at its end offsets or its max, the consumer
	// stays where it is: cont holds the offsets that Read returned, for
	// every partition assigned, and left the records it had fetched
	// beyond them. A Read from exactly cont goes on with them; any other
	// reassigns the consumer. Reassigning after every Read threw away what
	// kgo had fetched ahead, which was fetched and decoded again by the
	// next Read: measured with the Kafka pipe benchmark, 3 records decoded
	// for every record loaded. left holds at most what one Read polled
	// and did not hand over (fetch.max.bytes a poll, the poll being read
	// and the one polled ahead).
	cont Offsets
	left []*kgo.Record
	// began says how the last Read began (see Began).
	began string
	// budget is the consumer's decompressor when Source.MaxFetchMemory
	// is set.
	budget *fetchBudget
}

// How a Read began, as Began reports it.
const (
	// BeganNew: the client's consumer was made for this Read.
	BeganNew = "new"
	// BeganContinued: the Read went on where the last one ended, with
	// what the consumer had fetched ahead.
	BeganContinued = "continued"
	// BeganReassigned: the consumer was moved to the Read's offsets,
	// dropping what it had fetched ahead (a retry, a reset, a batch after
	// another worker's, a Read after one that failed).
	BeganReassigned = "reassigned"
)

// Began says how the last Read began: BeganNew, BeganContinued or
// BeganReassigned; "" before any Read that had records to read. A pipe
// whose batches stop going on fetches and decodes records twice.
func (c *Client) Began() string { return c.began }

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
	return c.wrapTopic(c.src.Topic, what, err)
}

func (c *Client) wrapTopic(topic, what string, err error) error {
	return fmt.Errorf("kafka topic %s at %s: %s: %w", topic, strings.Join(c.src.Bootstrap, ","), what, err)
}

func (c *Client) listed(ctx context.Context, what string, list func(context.Context, ...string) (kadm.ListedOffsets, error)) (Offsets, error) {
	return c.listedTopic(ctx, c.src.Topic, what, list)
}

func (c *Client) listedTopic(ctx context.Context, topic, what string, list func(context.Context, ...string) (kadm.ListedOffsets, error)) (Offsets, error) {
	lo, err := list(ctx, topic)
	if err != nil {
		return nil, c.wrapTopic(topic, what, err)
	}
	if err := lo.Error(); err != nil {
		if errors.Is(err, kerr.UnknownTopicOrPartition) {
			return nil, c.wrapTopic(topic, what, fmt.Errorf("the topic does not exist (create it, or check the topic name)"))
		}
		return nil, c.wrapTopic(topic, what, err)
	}
	out := Offsets{}
	lo.Each(func(l kadm.ListedOffset) {
		if l.Topic == topic {
			out[l.Partition] = l.Offset
		}
	})
	if len(out) == 0 {
		return nil, c.wrapTopic(topic, what, fmt.Errorf("the topic does not exist or has no partitions"))
	}
	return out, nil
}

// EndOffsets returns, per partition, the offset after the last record a
// read may see (the last stable offset with isolation.level read_committed).
func (c *Client) EndOffsets(ctx context.Context) (Offsets, error) {
	return c.endOffsets(ctx, c.src.Topic)
}

// endOffsets is EndOffsets of any topic of the client's cluster (a
// Pool's shared client serves many).
func (c *Client) endOffsets(ctx context.Context, topic string) (Offsets, error) {
	if c.st.readCommitted {
		return c.listedTopic(ctx, topic, "list end offsets", c.adm.ListCommittedOffsets)
	}
	return c.listedTopic(ctx, topic, "list end offsets", c.adm.ListEndOffsets)
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

// consumer returns the client's consumer, reading assign from `from`, and
// the records to hand over before any it fetches: the consumer of the last
// Read, going on where that Read stopped with what it had fetched beyond
// its end (see Client.left), when `from` is exactly where it stopped; else
// the last consumer reassigned (which drops what it fetched beyond that
// Read's end), or a new one.
func (c *Client) consumer(assign map[int32]kgo.Offset, from Offsets) (*kgo.Client, []*kgo.Record, error) {
	if c.cons != nil && c.goesOn(assign, from) {
		left := c.left
		c.left, c.cont = nil, nil
		c.began = BeganContinued
		return c.cons, left, nil
	}
	c.left, c.cont = nil, nil
	c.began = BeganNew
	if c.cons != nil {
		c.began = BeganReassigned
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
		if c.src.MaxFetchMemory > 0 {
			// The client's own decompressor, bounded per batch
			// (MaxDecompressBatchBytes: a decompressor passed in is
			// used as is), under the fetch's budget.
			inner, ok := c.cl.OptValue(kgo.WithDecompressor).(kgo.Decompressor)
			if !ok {
				return nil, nil, errors.New("the Kafka client has no decompressor")
			}
			c.budget = newFetchBudget(inner, c.src.MaxFetchMemory)
			opts = append(opts, kgo.WithDecompressor(c.budget))
		}
		cons, err := kgo.NewClient(opts...)
		if err != nil {
			return nil, nil, err
		}
		c.cons = cons
	}
	c.assigned = c.assigned[:0]
	for p := range assign {
		c.assigned = append(c.assigned, p)
	}
	return c.cons, nil, nil
}

// goesOn reports whether a Read from `from` of the partitions in assign
// continues the last Read exactly: every partition the consumer reads
// stands where that Read stopped, and it reads every partition assigned.
func (c *Client) goesOn(assign map[int32]kgo.Offset, from Offsets) bool {
	if c.cont == nil {
		return false
	}
	for p, o := range c.cont {
		if f, ok := from[p]; !ok || f != o {
			return false
		}
	}
	for p := range assign {
		if _, ok := c.cont[p]; !ok {
			return false
		}
	}
	return true
}

// Read calls fn for the records from `from` up to (not including) `until`,
// at most max of them, partition by partition in offset order (partitions
// interleave). It returns the offsets after the last record handed to fn.
// A partition that gets no records for stall (the end of a compacted
// partition, transaction markers) ends where it is.
//
// A Read that starts where the last one ended goes on with the records the
// consumer fetched beyond that end (see Client.left).
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
	cons, left, err := c.consumer(assign, from)
	if err != nil {
		return next, c.wrap("consume", err)
	}

	open := len(assign)
	n := 0
	var (
		stop       error
		progressed bool
		// beyond are the records fetched that this Read does not hand
		// over: past `until`, or past max. The next Read takes them if
		// it starts where this one ends (see consumer).
		beyond []*kgo.Record
	)
	// Each partition's position, looked up once per run of its records
	// (kgo hands them over partition by partition) rather than in the
	// maps for every record; next is brought up to date on the way out.
	type span struct {
		next, until int64
		in          bool // has an end in until
	}
	spans := make(map[int32]*span, len(from))
	for p, o := range from {
		u, ok := until[p]
		spans[p] = &span{next: o, until: u, in: ok}
	}
	lastP, last := int32(-1), (*span)(nil)
	offer := func(r *kgo.Record) {
		sp := last
		if r.Partition != lastP || sp == nil {
			sp = spans[r.Partition]
			lastP, last = r.Partition, sp
		}
		switch {
		case stop != nil || n >= max || sp == nil || !sp.in || r.Offset >= sp.until:
			beyond = append(beyond, r)
			return
		case r.Offset < sp.next:
			return // before `from`: kgo started within a batch
		}
		if err := fn(r); err != nil {
			stop = err
			return
		}
		n++
		progressed = true
		sp.next = r.Offset + 1
		if sp.next >= sp.until {
			open--
		}
	}
	clean := false
	defer func() {
		// Only a Read that ended at its end or its max leaves the consumer
		// where the offsets it returns say: the next one may go on.
		if clean {
			c.cont, c.left = Offsets{}, beyond
			for _, p := range c.assigned {
				c.cont[p] = spans[p].next // every partition assigned is in from
			}
		}
	}()
	// Every return hands over next, the map this fills.
	defer func() {
		for p, sp := range spans {
			next[p] = sp.next
		}
	}()
	for _, r := range left {
		offer(r)
	}
	if stop != nil {
		return next, stop
	}
	if open == 0 || n >= max {
		clean = true
		return next, nil
	}

	// kgo issues the next fetch only once the last one has been polled; a
	// poller of its own lets the broker serve (and kgo decode) the next
	// fetch while fn works on this one.
	pctx, stopPolling := context.WithCancel(ctx)
	fetches := make(chan kgo.Fetches, 1)
	polled := make(chan struct{})
	var unsent kgo.Fetches // polled when told to stop
	// The consumer outlives this Read: its poller must be gone before the
	// next Read assigns it, or it would take that Read's records; what it
	// polled and this Read did not take stays for the next Read.
	defer func() {
		stopPolling()
		<-polled
		for fs := range fetches {
			clean = clean && keepBeyond(fs, &beyond)
		}
		clean = clean && keepBeyond(unsent, &beyond)
	}()
	go func() {
		defer close(polled)
		defer close(fetches)
		for pctx.Err() == nil {
			wctx, cancel := context.WithTimeout(pctx, time.Second)
			if c.budget != nil {
				c.budget.polled()
			}
			fs := cons.PollFetches(wctx)
			cancel()
			select {
			case fetches <- fs:
			case <-pctx.Done():
				unsent = fs
				return
			}
		}
	}()

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
			if ferr != nil {
				return
			}
			if big, ok := errors.AsType[*kgo.ErrDecompressTooLarge](err); ok {
				e := &BatchTooLargeError{Topic: c.src.Topic, Partition: big.Partition, Offset: big.Offset, Next: big.NextOffset, Limit: c.src.MaxBatchBytes}
				if c.budget != nil && c.budget.tripped() {
					e.Fetch, e.Limit = true, c.src.MaxFetchMemory
				}
				ferr = e
				return
			}
			ferr = c.wrap(fmt.Sprintf("fetch partition %d", p), err)
		})
		if ferr != nil {
			return next, ferr
		}
		progressed = false
		fs.EachRecord(offer)
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
	clean = true
	return next, nil
}

// BatchTooLargeError is a record batch that decompresses to more than
// Source.MaxBatchBytes, or (Fetch) that with the batches fetched before it
// takes more than Source.MaxFetchMemory decoded: the data's fault, not a
// transient failure, so reading the same offsets fails the same way (a
// fetch begins where the last one stopped).
type BatchTooLargeError struct {
	Topic     string
	Partition int32
	Offset    int64 // the batch's first offset
	Next      int64 // the offset after its last record
	Limit     int64
	Fetch     bool // the fetch's budget, Limit being MaxFetchMemory
}

func (e *BatchTooLargeError) Error() string {
	limit := e.Limit
	if limit <= 0 {
		limit = 1 << 30 // the Kafka client's own bound
	}
	size := fmt.Sprintf("%d bytes", limit)
	if limit%(1<<20) == 0 {
		size = fmt.Sprintf("%d MiB", limit>>20)
	}
	span := ""
	if e.Next > e.Offset+1 {
		span = fmt.Sprintf(" (up to offset %d)", e.Next-1)
	}
	if e.Fetch {
		return fmt.Sprintf("topic %s partition %d offset %d: the record batch%s and those fetched before it take more than %s decompressed and decoded (their bytes and about %d bytes a record; LAKEPIPE_MAX_KAFKA_FETCH_MEMORY on the workers): batches that decompress hundreds of times over (decompression bombs), or millions of records of a few bytes",
			e.Topic, e.Partition, e.Offset, span, size, recordCost)
	}
	return fmt.Sprintf("topic %s partition %d offset %d: a record batch%s decompresses to more than %s (LAKEPIPE_MAX_KAFKA_BATCH_BYTES on the workers): a decompression bomb, or a producer batching far more than Kafka's usual 1 MiB",
		e.Topic, e.Partition, e.Offset, span, size)
}

// keepBeyond adds the records of fetches polled but not read to beyond;
// false when they hold an error other than the poll's own timeout (the
// consumer's position is then not known: the next Read reassigns it).
func keepBeyond(fs kgo.Fetches, beyond *[]*kgo.Record) bool {
	ok := true
	fs.EachError(func(_ string, _ int32, err error) {
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			ok = false
		}
	})
	fs.EachRecord(func(r *kgo.Record) { *beyond = append(*beyond, r) })
	return ok
}
