package catalog

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/seal"
)

// secretRow is a row of liveSecrets as ClickHouse returns it.
func secretRow(kind Kind, name, spec, stored string, updated time.Time, version uint64) []any {
	return []any{string(kind), "", name, spec, stored, uint8(0), updated, version}
}

func mustSeal(t *testing.T, k *seal.Key, kind Kind, name, secret string) string {
	t.Helper()
	s, err := seal.New(k).Seal(secret, secretAAD(kind, "", name))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSecretStatus(t *testing.T) {
	a, b := testKey(t, 1), testKey(t, 2)
	f := &fakeStore{}
	c := openFake(t, f, WithSealer(seal.New(a)))
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	f.on(liveSecrets, nil,
		secretRow(KindConnection, "c1", "{}", mustSeal(t, a, KindConnection, "c1", "x"), at, 1),
		secretRow(KindConnection, "c2", "{}", mustSeal(t, a, KindConnection, "c2", "y"), at, 2),
		secretRow(KindPipe, "p1", "{}", mustSeal(t, b, KindPipe, "p1", "z"), at, 3),
		secretRow(KindPipe, "p2", "{}", "legacy-plaintext", at, 4),
		secretRow(KindPipe, "p3", "{}", seal.Prefix+"garbage", at, 5), // malformed counts as plaintext
	)
	f.on("SELECT toString(sum(stale))", nil, []any{"3"})
	st, err := c.SecretStatus(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := SecretStatus{ByKey: map[string]int{a.ID(): 2, b.ID(): 1, Plaintext: 2}, Stale: 3}
	if !reflect.DeepEqual(st, want) {
		t.Errorf("SecretStatus = %+v, want %+v", st, want)
	}
	for _, q := range queries(f.take(), "Query") {
		if q != liveSecrets {
			t.Errorf("query %s", q)
		}
	}

	f.on(liveSecrets, errors.New("down"))
	if _, err := c.SecretStatus(context.Background()); err == nil || err.Error() != "read catalog: down" {
		t.Errorf("err = %v", err)
	}
}

// TestReseal checks that Reseal rewrites every secret not sealed with the
// current key (old key, plaintext), keeps each object's spec and times,
// skips objects changed since it read them, reports those that do not open
// after doing the rest, and never sends a secret in clear.
func TestReseal(t *testing.T) {
	cur, old := testKey(t, 1), testKey(t, 2)
	updated := time.Date(2024, 6, 7, 8, 9, 10, 0, time.UTC)
	plain := map[string]string{"current": "pw-current", "old": "pw-old", "legacy": "pw-legacy", "raced": "pw-raced", "lost": "pw-lost"}
	f := &fakeStore{}
	c := openFake(t, f, WithSealer(seal.New(cur, old)))
	f.on(liveSecrets, nil,
		secretRow(KindConnection, "current", `{"type":"S3"}`, mustSeal(t, cur, KindConnection, "current", plain["current"]), updated, 10),
		secretRow(KindConnection, "old", `{"type":"OSS"}`, mustSeal(t, old, KindConnection, "old", plain["old"]), updated, 11),
		secretRow(KindPipe, "legacy", `{"kind":"KAFKA"}`, plain["legacy"], updated, 12),
		secretRow(KindConnection, "raced", `{}`, mustSeal(t, old, KindConnection, "raced", plain["raced"]), updated, 13),
		secretRow(KindConnection, "lost", `{}`, mustSeal(t, testKey(t, 3), KindConnection, "lost", plain["lost"]), updated, 14),
	)
	// Each object's version as Reseal checks it just before rewriting;
	// "raced" was written again in the meantime.
	for name, v := range map[string]uint64{"old": 11, "legacy": 12, "raced": 99} {
		kind := KindConnection
		if name == "legacy" {
			kind = KindPipe
		}
		f.on("SELECT toString(max(version)) FROM lakepipe.objects WHERE "+where(kind, "", name), nil, []any{strconv.FormatUint(v, 10)})
	}
	f.on("SELECT toString(count())", nil, []any{"0"})

	res, err := c.Reseal(context.Background())
	if want := (ResealResult{Resealed: 2, Current: 1}); res != want {
		t.Errorf("Reseal = %+v, want %+v", res, want)
	}
	if err == nil || !strings.HasPrefix(err.Error(), "1 secrets not resealed: connection lost: secret sealed with key "+testKey(t, 3).ID()) {
		t.Errorf("err = %v", err)
	}
	calls := f.take()
	for _, p := range plain {
		assertNoSecret(t, calls, p)
		if err != nil && strings.Contains(err.Error(), p) {
			t.Errorf("error shows a secret: %v", err)
		}
	}

	rows := insertedObjects(t, calls)
	var names []string
	for _, r := range rows {
		names = append(names, r.name)
		if id, _ := seal.StoredKeyID(r.secret); id != cur.ID() {
			t.Errorf("%s: resealed with %q, want the current key", r.name, id)
		}
		got, err := seal.New(cur).Open(r.secret, secretAAD(Kind(r.kind), r.schema, r.name))
		if err != nil || got != plain[r.name] {
			t.Errorf("%s: resealed secret opens as %q, %v", r.name, got, err)
		}
		if !r.updated.Equal(updated) || r.deleted != 0 {
			t.Errorf("%s: rewritten with updated %v, deleted %d; want them kept", r.name, r.updated, r.deleted)
		}
	}
	if want := []string{"old", "legacy"}; !reflect.DeepEqual(names, want) {
		t.Errorf("rewrote %v, want %v", names, want)
	}
	if len(rows) == 2 && (rows[0].spec != `{"type":"OSS"}` || rows[1].spec != `{"kind":"KAFKA"}`) {
		t.Errorf("specs changed: %q, %q", rows[0].spec, rows[1].spec)
	}
	// The object already current still has its older secret rows cleaned.
	if !strings.Contains(strings.Join(queries(calls, "Strings"), "\n"),
		"SELECT toString(count()) FROM lakepipe.objects WHERE kind = 'connection' AND schema = '' AND name = 'current' AND version < 10 AND secret != ''") {
		t.Errorf("no clean-up check for the current object: %q", queries(calls, "Strings"))
	}
}

func TestResealNeedsCurrentKey(t *testing.T) {
	for _, s := range []*seal.Sealer{nil, seal.New(nil, testKey(t, 1)), seal.Plaintext()} {
		f := &fakeStore{}
		c := openFake(t, f, WithSealer(s))
		if _, err := c.Reseal(context.Background()); !errors.Is(err, seal.ErrNoKey) {
			t.Errorf("Reseal without a current key: err = %v", err)
		}
		if calls := f.take(); len(calls) != 0 {
			t.Errorf("Reseal without a current key queried %v", calls)
		}
	}
}
