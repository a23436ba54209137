package kafka

import (
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
