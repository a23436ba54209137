package changes

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"maps"
	"strconv"
	"sync"

	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/schemas"
)

// partsTokenQuery names the active parts of the catalog and the change
// log. ClickHouse never reuses a part name (block numbers only grow), so
// the answer changes whenever either table is written (an insert adds a
// part, a mutation renames one) and stays the same while neither is. A
// merge changes it too, which only costs a check that was not needed.
var partsTokenQuery = "SELECT arrayStringConcat(arraySort(groupArray(concat(table, '/', name))), ' ') FROM system.parts " +
	"WHERE database = " + chsql.QuoteString(schemas.SystemDB) + " AND table IN ('objects', 'table_commits') AND active"

// Freshness remembers what the last full check of a stream read found
// current (the catalog entries' versions, the cached commit lists), and
// the parts token read before that check. A later read that used the same
// cached values and reads the same token needs no full check: nothing was
// written to the catalog or the change log in between. One cheap
// system.parts read instead of three MergeTree reads (the version checks
// and the change log), about 1.5 ms instead of 5 on ClickHouse 18.16.
// Copies of the engine share it.
type Freshness struct {
	mu    sync.Mutex
	token string
	// current maps a cached value's key to its fingerprint as found
	// current while the parts token was token.
	current map[string]string
	// changed counts the reads in a row that found the token changed;
	// skip, the reads left that go without it (see worthReading).
	changed, skip int
}

// A process whose catalog or change log is written all the time (pipes
// committing every second) mostly finds the token changed, and then pays
// for it on top of the full check. After tokenMisses such reads in a row,
// the next tokenSkips reads run the full check at once, alongside their
// query, as reads did before the token; then the token is tried again.
const (
	TokenMisses = 3
	TokenSkips  = 16
)

// WorthReading reports whether a read should read the parts token.
func (f *Freshness) WorthReading() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.skip > 0 {
		f.skip--
		return false
	}
	return true
}

// Skipping reports whether reads go without the token for now, without
// counting a read (for the reads of a statement's translation).
func (f *Freshness) Skipping() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.skip > 0
}

// Holds reports whether every value in used was found current at token.
func (f *Freshness) Holds(token string, used map[string]string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if token != f.token {
		if f.changed++; f.changed >= TokenMisses {
			f.changed, f.skip = 0, TokenSkips
		}
		return false
	}
	f.changed = 0
	if len(used) == 0 {
		return false
	}
	for k, v := range used {
		if cur, ok := f.current[k]; !ok || cur != v {
			return false
		}
	}
	return true
}

// Record notes that the values in used were found current by a check
// that started after the parts token was read as token. Values found at
// an older token are forgotten.
func (f *Freshness) Record(token string, used map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if token != f.token || f.current == nil || len(f.current) >= maxCached {
		f.token = token
		f.current = map[string]string{}
	}
	maps.Copy(f.current, used)
}

// maxCached bounds what freshness remembers at one token.
const maxCached = 4096

// ErrTokenSkipped stands for a parts token not read (see worthReading).
var ErrTokenSkipped = errors.New("parts token not read")

// PartsToken reads the parts token (see partsTokenQuery).
func (e *Log) PartsToken(ctx context.Context) (string, error) {
	v, err := e.St.Strings(ctx, partsTokenQuery)
	if err != nil || len(v) != 1 {
		return "", err
	}
	return v[0], nil
}

// CommitsPrint fingerprints a cached commit list.
func CommitsPrint(commits []CommitRef) string {
	h := fnv.New64a()
	var b [8]byte
	put := func(v uint64) {
		binary.LittleEndian.PutUint64(b[:], v)
		h.Write(b[:])
	}
	for _, c := range commits {
		put(c.Version)
		put(c.ID)
		put(uint64(c.At.UnixNano()))
		put(uint64(len(c.Kind)))
		h.Write([]byte(c.Kind))
	}
	return strconv.FormatUint(h.Sum64(), 16) + "/" + strconv.Itoa(len(commits))
}
