//go:build integration

package integration

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lakepipe/lakepipe/internal/query"
)

// TestDirectoryRefreshInBlocks: a directory refresh lists the volume page
// by page and inserts its snapshot in blocks (query.DirectoryBlock), so
// that a volume of millions of objects costs a page and a block of
// memory. Blocks of 10 over 25 files: DIRECTORY lists every file once,
// and the next refresh replaces the snapshot whole.
func TestDirectoryRefreshInBlocks(t *testing.T) {
	s := newStack(t)
	defer func(n int) { query.DirectoryBlock = n }(query.DirectoryBlock)
	query.DirectoryBlock = 10
	s.putMany(25, func(i int) string { return fmt.Sprintf("blk/f%02d.csv", i) }, func(i int) []byte { return []byte(fmt.Sprintf("%d\n", i)) })
	s.volume("blk_vol", "blk", false)
	count := `SELECT COUNT(*), COUNT(DISTINCT relative_path) FROM DIRECTORY(VOLUME blk_vol)`
	wantRows(t, "the snapshot taken at CREATE", s.run(count), "25|25")
	s.put("blk/g.csv", []byte("x\n"))
	if res := s.run(`ALTER VOLUME blk_vol REFRESH`); !strings.Contains(res.Message, "26 files") {
		t.Fatalf("ALTER VOLUME REFRESH said %q, want 26 files", res.Message)
	}
	wantRows(t, "the refreshed snapshot", s.run(count), "26|26")
}
