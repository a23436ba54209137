package objstore

import (
	"errors"
	"testing"
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
	for _, in := range []string{"http://b/x", "b/x", "oss://b/../x", ""} {
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
	for _, in := range []string{"../a.csv", "x/../../a.csv", "..", `..\a`, "a/../.."} {
		if _, err := v.Key(in); !errors.Is(err, ErrEscape) {
			t.Errorf("Key(%q) err = %v, want ErrEscape", in, err)
		}
	}
}
