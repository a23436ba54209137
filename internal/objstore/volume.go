// Package objstore reaches the files of external volumes in any S3-compatible
// object store (S3, OSS, COS, MinIO, versitygw) through minio-go. A Volume is
// a bucket and a prefix; every path a user gives is relative to the prefix
// and can never reach outside it.
package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Conn is a storage connection. AccessKey is a secret: it is never part of
// an error or a String.
type Conn struct {
	Name      string
	Kind      string // OSS, COS, S3
	Endpoint  string // host[:port], optionally with http:// or https://
	Region    string
	AccessID  string
	AccessKey string
}

// Location is where a volume lives.
type Location struct {
	Scheme string // oss, cos, s3
	Bucket string
	Prefix string // "" for the bucket root, else "dir/sub/" (always ends in /)
}

// ParseLocation reads oss://bucket/dir/, cos://…, s3://….
func ParseLocation(loc string) (Location, error) {
	u, err := url.Parse(loc)
	if err != nil || u.Host == "" {
		return Location{}, fmt.Errorf("location %q: expected oss://bucket/dir/, cos://bucket/dir/ or s3://bucket/dir/", loc)
	}
	switch strings.ToLower(u.Scheme) {
	case "oss", "cos", "s3", "s3a", "minio":
	default:
		return Location{}, fmt.Errorf("location %q: scheme %q is not one of oss, cos, s3", loc, u.Scheme)
	}
	p := strings.Trim(path.Clean("/"+u.Path), "/")
	if strings.Contains(u.Path, "..") {
		return Location{}, fmt.Errorf("location %q: '..' is not allowed", loc)
	}
	if p != "" {
		p += "/"
	}
	return Location{Scheme: strings.ToLower(u.Scheme), Bucket: u.Host, Prefix: p}, nil
}

// IsBucketRoot reports whether the location is a whole bucket.
func (l Location) IsBucketRoot() bool { return l.Prefix == "" }

func (l Location) String() string { return l.Scheme + "://" + l.Bucket + "/" + l.Prefix }

// Volume is a bucket+prefix on one connection.
type Volume struct {
	client    *minio.Client
	conn      Conn
	loc       Location
	recursive bool
}

// Object is one file of a volume.
type Object struct {
	Path     string // relative to the volume
	Size     int64
	Modified time.Time
	ETag     string
}

// Open prepares access to a volume; it does not contact the server.
func Open(conn Conn, loc Location, recursive bool) (*Volume, error) {
	ep := strings.TrimSpace(conn.Endpoint)
	secure := true
	switch {
	case strings.HasPrefix(ep, "http://"):
		ep, secure = strings.TrimPrefix(ep, "http://"), false
	case strings.HasPrefix(ep, "https://"):
		ep = strings.TrimPrefix(ep, "https://")
	}
	ep = strings.TrimSuffix(ep, "/")
	if ep == "" {
		return nil, fmt.Errorf("storage connection %s has no ENDPOINT", conn.Name)
	}
	lookup := minio.BucketLookupAuto
	if strings.Contains(ep, "aliyuncs.com") || strings.Contains(ep, "myqcloud.com") {
		// OSS and COS only serve virtual-hosted-style requests.
		lookup = minio.BucketLookupDNS
	}
	client, err := minio.New(ep, &minio.Options{
		Creds:        credentials.NewStaticV4(conn.AccessID, conn.AccessKey, ""),
		Secure:       secure,
		Region:       conn.Region,
		BucketLookup: lookup,
	})
	if err != nil {
		return nil, fmt.Errorf("storage connection %s: endpoint %q: %v", conn.Name, conn.Endpoint, err)
	}
	return &Volume{client: client, conn: conn, loc: loc, recursive: recursive}, nil
}

// Location returns where the volume is.
func (v *Volume) Location() Location { return v.loc }

// ErrEscape is returned for paths that would leave the volume.
var ErrEscape = errors.New("path leaves the volume")

// Key maps a path relative to the volume to the object key, refusing paths
// that climb out of the volume's prefix ("../x", "/x" is taken as relative).
func (v *Volume) Key(rel string) (string, error) {
	if strings.Contains(rel, "\\") || strings.ContainsRune(rel, 0) {
		return "", fmt.Errorf("%q: %w", rel, ErrEscape)
	}
	for _, part := range strings.Split(rel, "/") {
		if part == ".." {
			return "", fmt.Errorf("%q: %w (no '..' in volume paths)", rel, ErrEscape)
		}
	}
	clean := strings.TrimPrefix(path.Clean("/"+rel), "/")
	if clean == "." {
		clean = ""
	}
	return v.loc.Prefix + clean, nil
}

// Dir maps a sub-directory to a key prefix ending in "/" ("" = the root).
func (v *Volume) Dir(sub string) (string, error) {
	k, err := v.Key(sub)
	if err != nil {
		return "", err
	}
	if k != "" && !strings.HasSuffix(k, "/") {
		k += "/"
	}
	return k, nil
}

// List returns the files under a sub-directory ("" for all), sorted by
// path. Without RECURSIVE only the directory's own files are listed.
func (v *Volume) List(ctx context.Context, sub string) ([]Object, error) {
	prefix, err := v.Dir(sub)
	if err != nil {
		return nil, err
	}
	var out []Object
	for o := range v.client.ListObjects(ctx, v.loc.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: v.recursive}) {
		if o.Err != nil {
			return nil, v.wrap("list", prefix, o.Err)
		}
		if strings.HasSuffix(o.Key, "/") {
			continue // directory markers and common prefixes
		}
		out = append(out, Object{
			Path:     strings.TrimPrefix(o.Key, v.loc.Prefix),
			Size:     o.Size,
			Modified: o.LastModified.UTC(),
			ETag:     strings.Trim(o.ETag, `"`),
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// Stat returns one file's metadata.
func (v *Volume) Stat(ctx context.Context, rel string) (Object, error) {
	key, err := v.Key(rel)
	if err != nil {
		return Object{}, err
	}
	info, err := v.client.StatObject(ctx, v.loc.Bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return Object{}, v.wrap("stat", rel, err)
	}
	return Object{Path: rel, Size: info.Size, Modified: info.LastModified.UTC(), ETag: strings.Trim(info.ETag, `"`)}, nil
}

// File is an open volume file: a streaming reader that also reads at
// offsets (for Parquet footers).
type File interface {
	io.Reader
	io.ReaderAt
	io.Closer
}

// OpenFile opens a file for reading; data is fetched as it is read.
func (v *Volume) OpenFile(ctx context.Context, rel string) (File, Object, error) {
	obj, err := v.Stat(ctx, rel)
	if err != nil {
		return nil, Object{}, err
	}
	key, _ := v.Key(rel)
	f, err := v.client.GetObject(ctx, v.loc.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, Object{}, v.wrap("read", rel, err)
	}
	return f, obj, nil
}

// Put writes a file of unknown size from r (multipart upload when large).
func (v *Volume) Put(ctx context.Context, rel string, r io.Reader, contentType string) (int64, error) {
	key, err := v.Key(rel)
	if err != nil {
		return 0, err
	}
	info, err := v.client.PutObject(ctx, v.loc.Bucket, key, r, -1, minio.PutObjectOptions{ContentType: contentType, PartSize: 16 << 20})
	if err != nil {
		return 0, v.wrap("write", rel, err)
	}
	return info.Size, nil
}

// Remove deletes a file; deleting a missing file is not an error.
func (v *Volume) Remove(ctx context.Context, rel string) error {
	key, err := v.Key(rel)
	if err != nil {
		return err
	}
	if err := v.client.RemoveObject(ctx, v.loc.Bucket, key, minio.RemoveObjectOptions{}); err != nil {
		return v.wrap("delete", rel, err)
	}
	return nil
}

// Check contacts the server to verify the bucket and the credentials.
func (v *Volume) Check(ctx context.Context) error {
	ok, err := v.client.BucketExists(ctx, v.loc.Bucket)
	if err != nil {
		return v.wrap("open", "", err)
	}
	if !ok {
		return fmt.Errorf("bucket %q does not exist at %s (connection %s)", v.loc.Bucket, v.conn.Endpoint, v.conn.Name)
	}
	return nil
}

// ErrNotFound marks a missing file.
var ErrNotFound = errors.New("file not found")

// wrap turns S3 errors into messages that name the object and the fix,
// never the secret.
func (v *Volume) wrap(op, rel string, err error) error {
	resp := minio.ToErrorResponse(err)
	what := v.loc.String() + rel
	switch resp.Code {
	case "NoSuchKey":
		return fmt.Errorf("%s %s: %w", op, what, ErrNotFound)
	case "NoSuchBucket":
		return fmt.Errorf("%s %s: bucket %q does not exist", op, what, v.loc.Bucket)
	case "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "InvalidSecretKey",
		// versitygw answers an unknown access id with a 404 and this code.
		"XAdminUserNotFound":
		return fmt.Errorf("%s %s: the endpoint refused storage connection %s (%s): check its ACCESS_ID and ACCESS_KEY", op, what, v.conn.Name, resp.Code)
	}
	if resp.StatusCode == http.StatusNotFound {
		return fmt.Errorf("%s %s: %w", op, what, ErrNotFound)
	}
	msg := err.Error()
	if v.conn.AccessKey != "" {
		msg = strings.ReplaceAll(msg, v.conn.AccessKey, "***")
	}
	return fmt.Errorf("%s %s: %s", op, what, msg)
}
