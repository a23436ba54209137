//go:build integration

package integration

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lakepipe/lakepipe/internal/objstore"
)

// TestListPagesStopsAtItsPage: a listing that stops after its first page
// (a turn that has its batch) asks the S3 server for that page and no
// other, leaves no goroutine behind, and a context that ends between
// pages is an error, not the end of the listing. Requests are counted by
// a proxy in front of the real S3 server.
func TestListPagesStopsAtItsPage(t *testing.T) {
	s := newStack(t)
	const files = 2100 // three S3 pages of up to 1,000 keys
	s.putMany(files, func(i int) string { return fmt.Sprintf("pages/f%05d.csv", i) }, func(int) []byte { return []byte("x\n") })

	target, err := url.Parse(s3Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	var lists atomic.Int64
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Query().Get("list-type") == "2" {
			lists.Add(1)
		}
		proxy.ServeHTTP(w, r)
	}))
	defer srv.Close()
	// A new endpoint, hence its own client: the proxy sees every request.
	vol, err := objstore.Open(objstore.Conn{Name: "pages_conn", Kind: "S3", Endpoint: srv.URL, Region: s3Region, AccessID: s3AccessKey, AccessKey: s3SecretKey},
		objstore.Location{Scheme: "s3", Bucket: s3Bucket, Prefix: s.key("pages/")}, true)
	if err != nil {
		t.Fatal(err)
	}

	const stops = 5
	for i := 0; i < stops; i++ {
		var pages int
		err := vol.ListPages(s.Ctx, "", "f00010.csv", func(page []objstore.Object) error {
			pages++
			if page[0].Path != "f00011.csv" || len(page) != objstore.PageSize {
				t.Fatalf("first page: %d keys from %q, want %d from f00011.csv", len(page), page[0].Path, objstore.PageSize)
			}
			return objstore.ErrStopListing
		})
		if err != nil || pages != 1 {
			t.Fatalf("listing %d: %d pages, %v", i, pages, err)
		}
	}
	if n := lists.Load(); n != stops {
		t.Errorf("%d listings that each stopped at their first page asked the server for %d pages, want %d (a page fetched ahead and thrown away)", stops, n, stops)
	}
	var stacks strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&stacks, 1)
	if strings.Contains(stacks.String(), "minio-go/v7.(*Client).listObjects") {
		t.Errorf("a listing's goroutine outlived it:\n%s", stacks.String())
	}

	// All three pages when nothing stops it.
	lists.Store(0)
	var keys int
	if err := vol.ListPages(s.Ctx, "", "", func(page []objstore.Object) error { keys += len(page); return nil }); err != nil || keys != files {
		t.Fatalf("whole listing: %d keys, %v; want %d", keys, err, files)
	}
	if n := lists.Load(); n != 3 {
		t.Errorf("a whole listing of %d keys asked for %d pages, want 3", files, n)
	}

	// A context that ends between pages fails the listing.
	ctx, cancel := context.WithCancel(s.Ctx)
	defer cancel()
	err = vol.ListPages(ctx, "", "", func([]objstore.Object) error { cancel(); return nil })
	if err == nil {
		t.Fatal("a listing whose context ended after its first page returned no error")
	}
	t.Logf("cancelled listing: %v", err)
}
