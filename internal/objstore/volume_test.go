package objstore

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
)

func TestParseLocation(t *testing.T) {
	for in, want := range map[string]Location{
		"oss://my-bucket/data/": {Scheme: "oss", Bucket: "my-bucket", Prefix: "data/"},
		"s3://b/data/incoming":  {Scheme: "s3", Bucket: "b", Prefix: "data/incoming/"},
		"cos://b/":              {Scheme: "cos", Bucket: "b", Prefix: ""},
		"cos://b":               {Scheme: "cos", Bucket: "b", Prefix: ""},
	} {
		got, err := ParseLocation(in)
		if err != nil || got != want {
			t.Errorf("ParseLocation(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"http://b/x", "b/x", "oss://b/../x", "", "oss://b/%00/", `oss://b/a\b/`, "oss://b/%2e%2e/x", "oss://b/x/.."} {
		if _, err := ParseLocation(in); err == nil {
			t.Errorf("ParseLocation(%q) accepted", in)
		}
	}
	if l, _ := ParseLocation("oss://b/"); !l.IsBucketRoot() {
		t.Error("oss://b/ is not a bucket root")
	}
}

func TestKeyStaysInVolume(t *testing.T) {
	v := &Volume{loc: Location{Bucket: "b", Prefix: "data/"}}
	for in, want := range map[string]string{"a.csv": "data/a.csv", "/a.csv": "data/a.csv", "x/./y.csv": "data/x/y.csv", "": "data/"} {
		if got, err := v.Key(in); err != nil || got != want {
			t.Errorf("Key(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"../a.csv", "x/../../a.csv", "..", `..\a`, "a/../..", "x/../y.csv", `a\b.csv`, "a\x00b"} {
		if _, err := v.Key(in); !errors.Is(err, ErrEscape) {
			t.Errorf("Key(%q) err = %v, want ErrEscape", in, err)
		}
		if err := CheckPath(in); !errors.Is(err, ErrEscape) {
			t.Errorf("CheckPath(%q) err = %v, want ErrEscape", in, err)
		}
	}
}

// TestListedKeyVerbatim checks that what a listing shows is used as it is:
// none of these may be cleaned, refused or changed.
func TestListedKeyVerbatim(t *testing.T) {
	for _, prefix := range []string{"data/", ""} {
		v := &Volume{loc: Location{Bucket: "b", Prefix: prefix}}
		for _, rel := range []string{`a\b.csv`, "x/../y.csv", "a//b.csv", "a/./b.csv", "with space.csv", "ünïcødé-数据.csv",
			"./a.csv", "/a.csv", "..", "a/", strings.Repeat("d/", 400) + "f.csv"} {
			key := v.ListedKey(rel)
			if key != prefix+rel {
				t.Errorf("prefix %q: ListedKey(%q) = %q, want %q", prefix, rel, key, prefix+rel)
			}
			if got := v.listedPath(key); got != rel {
				t.Errorf("prefix %q: listedPath(%q) = %q, want %q", prefix, key, got, rel)
			}
		}
	}
}

// TestRefusedKey checks which S3 answers about a listed key mark it as one
// the store will not serve (a failed file) rather than trouble that may
// pass (retried).
func TestRefusedKey(t *testing.T) {
	v := &Volume{conn: Conn{Name: "c", AccessKey: "s3cret"}, loc: Location{Scheme: "s3", Bucket: "b", Prefix: "data/"}}
	for _, tt := range []struct {
		resp    minio.ErrorResponse
		refused bool
	}{
		{minio.ErrorResponse{StatusCode: http.StatusBadRequest, Code: "InvalidArgument"}, true},
		{minio.ErrorResponse{StatusCode: http.StatusBadRequest, Code: "400 Bad Request"}, true}, // a HEAD has no body
		{minio.ErrorResponse{StatusCode: http.StatusBadRequest, Code: "XMinioInvalidObjectName"}, true},
		{minio.ErrorResponse{StatusCode: http.StatusBadRequest, Code: "KeyTooLongError"}, true},
		{minio.ErrorResponse{StatusCode: http.StatusRequestURITooLong, Code: "414 Request-URI Too Long"}, true},
		{minio.ErrorResponse{StatusCode: http.StatusNotFound, Code: "NoSuchKey"}, false},
		{minio.ErrorResponse{StatusCode: http.StatusForbidden, Code: "AccessDenied"}, false},
		{minio.ErrorResponse{StatusCode: http.StatusForbidden, Code: "SignatureDoesNotMatch"}, false},
		{minio.ErrorResponse{StatusCode: http.StatusBadRequest, Code: "RequestTimeout"}, false},
		{minio.ErrorResponse{StatusCode: http.StatusServiceUnavailable, Code: "SlowDown"}, false},
		{minio.ErrorResponse{StatusCode: http.StatusInternalServerError, Code: "InternalError"}, false},
		{minio.ErrorResponse{StatusCode: http.StatusTooManyRequests}, false},
		{minio.ErrorResponse{}, false}, // not an S3 answer: a network error
	} {
		err := v.wrapKey("read", "a//b.csv", true, tt.resp)
		if got := errors.Is(err, ErrRefused); got != tt.refused {
			t.Errorf("%d %s: refused = %v, want %v (%v)", tt.resp.StatusCode, tt.resp.Code, got, tt.refused, err)
		}
		if !strings.Contains(err.Error(), "a//b.csv") || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%d %s: message %q does not name the file, or shows the secret", tt.resp.StatusCode, tt.resp.Code, err)
		}
		// A typed path is never ErrRefused: its errors stay as they were.
		if err := v.wrapKey("read", "a.csv", false, tt.resp); errors.Is(err, ErrRefused) {
			t.Errorf("%d %s: a typed path got ErrRefused", tt.resp.StatusCode, tt.resp.Code)
		}
	}
}
