package objstore

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"testing"
)

// fakeS3 is an S3 endpoint that serves keys exactly as they are sent,
// without cleaning them as a POSIX-backed store would: it shows what
// lakepipe asks for. Keys in refused answer 400 (a store that will not
// serve them); keys in ghosts are listed but answer 404.
type fakeS3 struct {
	objects map[string]string
	refused map[string]bool
	ghosts  map[string]bool
	asked   []string // every object key a HEAD, GET or DELETE named
}

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The key is what follows /bkt/, decoded from the path as sent.
	raw := r.URL.EscapedPath()
	rest, ok := strings.CutPrefix(raw, "/bkt/")
	if !ok && raw != "/bkt" {
		http.Error(w, "unknown bucket", http.StatusNotFound)
		return
	}
	key, err := url.PathUnescape(rest)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if key == "" && r.Method == http.MethodGet && r.URL.Query().Get("list-type") == "2" {
		f.list(w, r.URL.Query().Get("prefix"))
		return
	}
	f.asked = append(f.asked, key)
	body, found := f.objects[key]
	switch {
	case f.refused[key]:
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusBadRequest)
		if r.Method != http.MethodHead {
			fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InvalidArgument</Code><Message>bad key</Message></Error>`)
		}
	case r.Method == http.MethodDelete:
		delete(f.objects, key)
		w.WriteHeader(http.StatusNoContent)
	case !found || f.ghosts[key]:
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusNotFound)
		if r.Method != http.MethodHead {
			fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>no such key</Message></Error>`)
		}
	case r.Header.Get("If-Match") != "" && r.Header.Get("If-Match") != fakeETag(body):
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusPreconditionFailed)
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>PreconditionFailed</Code><Message>changed</Message></Error>`)
	default:
		w.Header().Set("ETag", fakeETag(body))
		w.Header().Set("Last-Modified", "Mon, 01 Jun 2026 12:00:00 GMT")
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		if r.Method == http.MethodHead {
			return
		}
		if rg := r.Header.Get("Range"); rg != "" {
			var from, to int
			if _, err := fmt.Sscanf(rg, "bytes=%d-%d", &from, &to); err == nil && from <= to && to < len(body) {
				body = body[from : to+1]
				w.Header().Set("Content-Length", fmt.Sprint(len(body)))
				w.WriteHeader(http.StatusPartialContent)
			}
		}
		io.WriteString(w, body)
	}
}

func (f *fakeS3) list(w http.ResponseWriter, prefix string) {
	type content struct {
		Key          string
		LastModified string
		ETag         string
		Size         int
	}
	var res struct {
		XMLName     xml.Name `xml:"ListBucketResult"`
		Name        string
		Prefix      string
		KeyCount    int
		MaxKeys     int
		IsTruncated bool
		Contents    []content
	}
	res.Name, res.Prefix, res.MaxKeys = "bkt", prefix, 1000
	var keys []string
	for k := range f.objects {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		res.Contents = append(res.Contents, content{Key: k, LastModified: "2026-06-01T12:00:00.000Z", ETag: fakeETag(f.objects[k]), Size: len(f.objects[k])})
	}
	res.KeyCount = len(keys)
	w.Header().Set("Content-Type", "application/xml")
	_ = xml.NewEncoder(w).Encode(res)
}

func fakeVolume(t *testing.T, f *fakeS3) *Volume {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	v, err := Open(Conn{Name: "fake", Endpoint: srv.URL, Region: "us-east-1", AccessID: "id", AccessKey: "secret"},
		Location{Scheme: "s3", Bucket: "bkt", Prefix: "data/"}, true)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// fakeETag is the fake store's ETag of an object: its length.
func fakeETag(body string) string { return `"e-` + fmt.Sprint(len(body)) + `"` }

// TestListedKeysRoundTrip lists odd keys from a store that keeps them as
// they are and reads, stats and deletes each by its listed path: the
// requests must name exactly the listed keys (minio-go escapes them in
// the URL; nothing cleans them).
func TestListedKeysRoundTrip(t *testing.T) {
	odd := []string{`a\b.csv`, "x/../y.csv", "a//b.csv", "a/./b.csv", "./lead.csv", "with space.csv",
		"ünïcødé-数据.csv", "100%+1 & more=?.csv", "#frag;semi.csv", strings.Repeat(strings.Repeat("d", 199)+"/", 4) + "f.csv"}
	f := &fakeS3{objects: map[string]string{}}
	for i, rel := range odd {
		f.objects["data/"+rel] = fmt.Sprintf("%d,row-%d\n", i, i)
	}
	v := fakeVolume(t, f)
	ctx := context.Background()
	var objs []Object
	if err := v.ListPages(ctx, "", "", func(page []Object) error { objs = append(objs, page...); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(objs) != len(odd) {
		t.Fatalf("listed %d objects, want %d: %+v", len(objs), len(odd), objs)
	}
	for _, o := range objs {
		want := f.objects[v.ListedKey(o.Path)]
		if want == "" {
			t.Errorf("listed path %q does not map back to a stored key", o.Path)
			continue
		}
		st, err := v.StatListed(ctx, o.Path)
		if err != nil || st.Path != o.Path || st.Size != int64(len(want)) {
			t.Errorf("StatListed(%q) = %+v, %v", o.Path, st, err)
		}
		r, _, err := v.OpenListed(ctx, o.Path, o.ETag)
		if err != nil {
			t.Errorf("OpenListed(%q): %v", o.Path, err)
			continue
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil || string(got) != want {
			t.Errorf("read %q = %q, %v; want %q", o.Path, got, err, want)
		}
	}
	f.asked = nil
	for _, o := range objs {
		if err := v.RemoveListed(ctx, o.Path); err != nil {
			t.Errorf("RemoveListed(%q): %v", o.Path, err)
		}
	}
	if len(f.objects) != 0 {
		t.Errorf("RemoveListed left %d objects: %v (asked for %q)", len(f.objects), f.objects, f.asked)
	}
}

// TestListedKeyRefused checks that a listed key the store will not serve
// (a 400, or listed but 404) is ErrRefused, a file that fails alone, while
// a key gone since the listing is ErrNotFound.
func TestListedKeyRefused(t *testing.T) {
	f := &fakeS3{
		objects: map[string]string{"data/bad.csv": "1\n", "data/ghost.csv": "1\n"},
		refused: map[string]bool{"data/bad.csv": true},
		ghosts:  map[string]bool{"data/ghost.csv": true},
	}
	v := fakeVolume(t, f)
	ctx := context.Background()
	for _, rel := range []string{"bad.csv", "ghost.csv"} {
		_, _, err := v.OpenListed(ctx, rel, "")
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), rel) || strings.Contains(err.Error(), "secret") {
			t.Errorf("OpenListed(%q) err = %v, want ErrRefused naming the file", rel, err)
		}
	}
	if _, _, err := v.OpenListed(ctx, "gone.csv", ""); !errors.Is(err, ErrNotFound) || errors.Is(err, ErrRefused) {
		t.Errorf("OpenListed(gone.csv) err = %v, want ErrNotFound only", err)
	}
	// A typed path that is missing stays ErrNotFound, never ErrRefused.
	if _, err := v.Stat(ctx, "bad.csv"); errors.Is(err, ErrRefused) {
		t.Errorf("Stat(bad.csv) err = %v: typed paths are not ErrRefused", err)
	}
}

// TestOpenListedVersion checks that a listed file is read in the version
// the listing saw: replaced before the open, or between the open and the
// first read, it is ErrNotFound (the next listing finds the new version),
// never the new content under the old version's name.
func TestOpenListedVersion(t *testing.T) {
	f := &fakeS3{objects: map[string]string{"data/a.csv": "1,x\n"}}
	v := fakeVolume(t, f)
	ctx := context.Background()
	var listed []Object
	if err := v.ListPages(ctx, "", "", func(page []Object) error { listed = append(listed, page...); return nil }); err != nil || len(listed) != 1 {
		t.Fatalf("listed %+v, %v", listed, err)
	}
	old := listed[0].ETag
	f.objects["data/a.csv"] = "22,yy\n"
	if _, _, err := v.OpenListed(ctx, "a.csv", old); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "replaced") {
		t.Errorf("OpenListed of a replaced file: %v, want ErrNotFound (replaced since it was listed)", err)
	}
	r, obj, err := v.OpenListed(ctx, "a.csv", strings.Trim(fakeETag("22,yy\n"), `"`))
	if err != nil {
		t.Fatalf("OpenListed of the listed version: %v", err)
	}
	defer r.Close()
	f.objects["data/a.csv"] = "333,zzz\n"
	if b, err := io.ReadAll(r); !errors.Is(err, ErrNotFound) {
		t.Errorf("reading a file replaced after its open: %q, %v (size %d), want ErrNotFound", b, err, obj.Size)
	}
}

// TestStatTypedFallsBackToKeyAsTyped checks that a typed path copied from a
// listing ("a//b.csv") finds that file when its cleaned form does not.
func TestStatTypedFallsBackToKeyAsTyped(t *testing.T) {
	f := &fakeS3{objects: map[string]string{"data/a//b.csv": "1\n", "data/c.csv": "2\n", "data/./d.csv": "3\n"}}
	v := fakeVolume(t, f)
	ctx := context.Background()
	for in, want := range map[string]string{"a//b.csv": "a//b.csv", "c.csv": "c.csv", "/c.csv": "c.csv", "x/./../c.csv": "", "./d.csv": "./d.csv"} {
		o, err := v.Stat(ctx, in)
		if want == "" {
			if !errors.Is(err, ErrEscape) {
				t.Errorf("Stat(%q) err = %v, want ErrEscape", in, err)
			}
			continue
		}
		if err != nil || o.Path != want {
			t.Errorf("Stat(%q) = %q, %v; want %q", in, o.Path, err, want)
		}
	}
	if _, err := v.Stat(ctx, "a/b.csv"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Stat(a/b.csv) err = %v, want ErrNotFound", err)
	}
}
