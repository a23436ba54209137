package kafka

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestPool(t *testing.T) {
	src := Source{Bootstrap: []string{"127.0.0.1:1"}, Topic: "t", Group: "g", Config: map[string]string{}}
	other := src
	other.Config = map[string]string{"sasl.password": "x"}
	if src.key() == other.key() {
		t.Fatal("sources that differ in a setting share a key")
	}
	p := NewPool(time.Hour)
	defer p.Close()
	a, err := p.Get(src)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Get(src) // a is lent: a zombie beside its retry gets its own
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatal("one client lent twice")
	}
	p.Put(a, false)
	p.Put(b, false) // the pipe needs one: b is closed
	if c, _ := p.Get(src); c != a {
		t.Fatal("the idle client was not reused")
	}
	if c, _ := p.Get(other); c == a {
		t.Fatal("a client was lent for another source")
	}
	p.Put(a, true) // broken: closed, not kept
	if c, _ := p.Get(src); c == a {
		t.Fatal("a broken client was lent again")
	}

	short := NewPool(10 * time.Millisecond)
	c, _ := short.Get(src)
	short.Put(c, false)
	deadline := time.Now().Add(5 * time.Second)
	for {
		short.mu.Lock()
		n := len(short.free)
		short.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("an idle client was kept past its idle time")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The end offsets of sources on the same brokers with the same settings
// are read with one shared client, whatever their topic and group; it
// closes once unused for the idle time.
func TestPoolSharedEndOffsets(t *testing.T) {
	src := Source{Bootstrap: []string{"127.0.0.1:1"}, Topic: "t", Group: "g", Config: map[string]string{}}
	p := NewPool(20 * time.Millisecond)
	defer p.Close()
	shared := func() []*Client {
		p.mu.Lock()
		defer p.mu.Unlock()
		var out []*Client
		for _, sc := range p.shared {
			out = append(out, sc.c)
		}
		return out
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	other := src
	other.Topic, other.Group = "u", "h"
	for _, s := range []Source{src, other} {
		if _, err := p.EndOffsets(ctx, s); err == nil || !strings.Contains(err.Error(), "kafka topic "+s.Topic) {
			t.Fatalf("no broker: err %v, want one naming topic %s", err, s.Topic)
		}
	}
	if n := len(shared()); n != 1 {
		t.Fatalf("%d shared clients for one cluster, want 1", n)
	}
	secured := src
	secured.Config = map[string]string{"sasl.password": "x"}
	_, _ = p.EndOffsets(ctx, secured)
	if n := len(shared()); n != 2 {
		t.Fatalf("%d shared clients for two settings, want 2", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(shared()) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("shared clients kept past their idle time")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
