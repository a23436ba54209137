// Package objstore reaches the files of external volumes in any S3-compatible
// object store (S3, OSS, COS, MinIO, versitygw) through minio-go. A Volume is
// a bucket and a prefix; every path a user gives is relative to the prefix
// and can never reach outside it.
package objstore

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
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
	// RoleARN, when set, is assumed with AccessID/AccessKey through STS
	// AssumeRole at STSEndpoint (default DefaultSTSEndpoint); the store is
	// then read with the role's temporary credentials, renewed before they
	// expire.
	RoleARN     string
	ExternalID  string
	STSEndpoint string
}

// DefaultSTSEndpoint is AWS's global STS endpoint.
const DefaultSTSEndpoint = "https://sts.amazonaws.com"

// creds are the credentials a connection signs with.
func (conn Conn) creds() (*credentials.Credentials, error) {
	if conn.RoleARN == "" {
		return credentials.NewStaticV4(conn.AccessID, conn.AccessKey, ""), nil
	}
	if conn.AccessID == "" || conn.AccessKey == "" {
		return nil, fmt.Errorf("storage connection %s: ROLE_ARN %s is assumed with the connection's ACCESS_ID and ACCESS_KEY, which it lacks", conn.Name, conn.RoleARN)
	}
	ep := cmp.Or(conn.STSEndpoint, DefaultSTSEndpoint)
	return credentials.New(&assumeRole{
		STSAssumeRole: &credentials.STSAssumeRole{STSEndpoint: ep, Options: credentials.STSAssumeRoleOptions{
			AccessKey: conn.AccessID, SecretKey: conn.AccessKey, Location: conn.Region,
			RoleARN: conn.RoleARN, RoleSessionName: "lakepipe", ExternalID: conn.ExternalID,
		}},
		conn: conn.Name, arn: conn.RoleARN, endpoint: ep,
	}), nil
}

// assumeRole is minio-go's AssumeRole provider with errors that say which
// role, of which connection, at which STS endpoint could not be assumed.
type assumeRole struct {
	*credentials.STSAssumeRole
	conn, arn, endpoint string
}

func (a *assumeRole) RetrieveWithCredContext(cc *credentials.CredContext) (credentials.Value, error) {
	v, err := a.STSAssumeRole.RetrieveWithCredContext(cc)
	if err != nil {
		return v, fmt.Errorf("storage connection %s: assume role %s through STS at %s: %w", a.conn, a.arn, a.endpoint, err)
	}
	return v, nil
}

func (a *assumeRole) Retrieve() (credentials.Value, error) {
	return a.RetrieveWithCredContext(nil)
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
	// A location is typed: like FILES and SUBDIRECTORY it may not climb
	// ('..'), nor hold a backslash or a NUL (url.Parse decodes %00).
	if err := CheckPath(u.Path); err != nil {
		return Location{}, fmt.Errorf("location %q: %w", loc, err)
	}
	p := strings.Trim(path.Clean("/"+u.Path), "/")
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
	// Path is the file's key less the volume's prefix, exactly as the
	// store lists it: it may hold "//", "./", "..", backslashes, spaces or
	// any other character a key may hold. It is given back to StatListed,
	// OpenListed and RemoveListed, which use it verbatim.
	Path     string
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
	key := sha256.Sum256(fmt.Appendf(nil, "%q\x00%v\x00%q\x00%d\x00%q\x00%q\x00%q\x00%q\x00%q", ep, secure, conn.Region, lookup, conn.AccessID, conn.AccessKey,
		conn.RoleARN, conn.ExternalID, conn.STSEndpoint))
	clients.Lock()
	client := clients.m[key]
	clients.Unlock()
	if client == nil {
		creds, err := conn.creds()
		if err != nil {
			return nil, err
		}
		client, err = minio.New(ep, &minio.Options{
			Creds:        creds,
			Secure:       secure,
			Region:       conn.Region,
			BucketLookup: lookup,
		})
		if err != nil {
			return nil, fmt.Errorf("storage connection %s: endpoint %q: %v", conn.Name, conn.Endpoint, err)
		}
		clients.Lock()
		if clients.m == nil || len(clients.m) >= maxClients {
			clients.m = map[[32]byte]*minio.Client{}
		}
		clients.m[key] = client
		clients.Unlock()
	}
	return &Volume{client: client, conn: conn, loc: loc, recursive: recursive}, nil
}

// clients are the S3 clients of the connections opened so far, by endpoint
// and credentials (hashed: the key is not kept in clear beside them). A
// client holds its own pool of HTTP connections; a pipe's turns reuse it
// instead of dialling the store each turn, which was much of an idle
// turn's cost. At most maxClients are kept (then the map starts over).
var clients struct {
	sync.Mutex
	m map[[32]byte]*minio.Client
}

const maxClients = 256

// Location returns where the volume is.
func (v *Volume) Location() Location { return v.loc }

// ErrEscape is returned for typed paths that would leave the volume. It is
// the user's mistake: retrying cannot help.
var ErrEscape = errors.New("path leaves the volume")

// ErrRefused marks a key the store will not serve (it answers a request for
// it with a client error, or the key is not one S3 can name). Retrying
// cannot help; the file fails on its own.
var ErrRefused = errors.New("the store refuses this key")

// CheckPath refuses a path a person typed (FILES('…'), SUBDIRECTORY '…')
// that could reach outside the volume: one with a '..' segment, a
// backslash (a separator to some stores and tools) or a NUL. It needs no
// server, so a statement can be checked before it runs.
func CheckPath(rel string) error {
	if strings.Contains(rel, "\\") || strings.ContainsRune(rel, 0) {
		return fmt.Errorf("%q: %w (no '\\' in volume paths)", rel, ErrEscape)
	}
	for _, part := range strings.Split(rel, "/") {
		if part == ".." {
			return fmt.Errorf("%q: %w (no '..' in volume paths)", rel, ErrEscape)
		}
	}
	return nil
}

// Key maps a path a person typed, relative to the volume, to the object
// key: CheckPath refuses paths that could leave the prefix, and the rest
// is cleaned ("/x" and "./x" are "x", "a//b" is "a/b"). The key always
// starts with the volume's prefix and has no '..' segment.
//
// Paths the volume listed must not go through Key: ListedKey maps them.
func (v *Volume) Key(rel string) (string, error) {
	if err := CheckPath(rel); err != nil {
		return "", err
	}
	clean := strings.TrimPrefix(path.Clean("/"+rel), "/")
	if clean == "." {
		clean = ""
	}
	return v.loc.Prefix + clean, nil
}

// ListedKey maps the Path of an Object the volume listed back to its key,
// verbatim: the prefix and the path, unchecked and uncleaned. What the
// store lists is what it stores, whatever it looks like; only a path a
// person types is checked (Key).
func (v *Volume) ListedKey(rel string) string { return v.loc.Prefix + rel }

// listedPath is the Path of a listed key (one under the prefix, as every
// key a listing of the prefix is): ListedKey's inverse.
func (v *Volume) listedPath(key string) string { return strings.TrimPrefix(key, v.loc.Prefix) }

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

// PageSize is how many objects ListPages hands over at a time (S3's own
// page size).
const PageSize = 1000

// ListPages lists the files under a sub-directory ("" for all) in key
// order, page by page, only those after the listed path startAfter when it
// is set (S3's StartAfter): fn gets each page, and may stop the listing by
// returning ErrStopListing. Memory stays at one page however large the
// volume.
func (v *Volume) ListPages(ctx context.Context, sub, startAfter string, fn func([]Object) error) error {
	prefix, err := v.Dir(sub)
	if err != nil {
		return err
	}
	opts := minio.ListObjectsOptions{Prefix: prefix, Recursive: v.recursive}
	if startAfter != "" {
		opts.StartAfter = v.ListedKey(startAfter)
	}
	// The iterator, not ListObjects' channel: the channel's goroutine
	// fetches the page after the one being read, which a listing that
	// stops at a batch throws away (a whole page of server time), and when
	// the listing stops early it blocks for good sending the context's
	// error that nobody reads (a goroutine and a page leaked per listing).
	// The iterator asks for a page only when the loop wants its first key.
	page := make([]Object, 0, PageSize)
	flush := func() error {
		if len(page) == 0 {
			return nil
		}
		err := fn(page)
		page = make([]Object, 0, PageSize)
		return err
	}
	for o := range v.client.ListObjectsIter(ctx, v.loc.Bucket, opts) {
		if o.Err != nil {
			return v.wrap("list", v.listedPath(prefix), o.Err)
		}
		if strings.HasSuffix(o.Key, "/") {
			continue // directory markers and common prefixes
		}
		page = append(page, Object{
			Path:     v.listedPath(o.Key),
			Size:     o.Size,
			Modified: o.LastModified.UTC(),
			ETag:     strings.Trim(o.ETag, `"`),
		})
		if len(page) == PageSize {
			if err := flush(); err != nil {
				if errors.Is(err, ErrStopListing) {
					return nil
				}
				return err
			}
		}
	}
	if err := ctx.Err(); err != nil {
		// The iterator ends quietly when the context ends between pages:
		// that is not the end of the listing.
		return v.wrap("list", v.listedPath(prefix), err)
	}
	if err := flush(); err != nil && !errors.Is(err, ErrStopListing) {
		return err
	}
	return nil
}

// ErrStopListing, returned by ListPages' fn, ends the listing early.
var ErrStopListing = errors.New("stop listing")

// Stat returns the metadata of a file named by a typed path (see Key):
// the file of the cleaned key, else, when there is none, the file whose
// key is the path as typed (so that "a//b.csv", copied from a listing,
// names that file). The Object's Path is the one found, as a listing
// shows it, to be given to OpenListed and RemoveListed.
func (v *Volume) Stat(ctx context.Context, rel string) (Object, error) {
	key, err := v.Key(rel)
	if err != nil {
		return Object{}, err
	}
	obj, err := v.stat(ctx, key, false)
	if asTyped := v.ListedKey(strings.TrimPrefix(rel, "/")); errors.Is(err, ErrNotFound) && asTyped != key {
		if o, err2 := v.stat(ctx, asTyped, false); err2 == nil {
			return o, nil
		}
	}
	return obj, err
}

// StatListed returns the metadata of a listed file (see ListedKey). A key
// the store will not serve is ErrRefused, a missing one ErrNotFound.
func (v *Volume) StatListed(ctx context.Context, rel string) (Object, error) {
	return v.stat(ctx, v.ListedKey(rel), true)
}

func (v *Volume) stat(ctx context.Context, key string, listed bool) (Object, error) {
	return v.statWith(ctx, key, listed, minio.StatObjectOptions{})
}

// statWith is stat with options: a version asked for (If-Match) that is
// not the file's is ErrNotFound, the file replaced since it was listed.
func (v *Volume) statWith(ctx context.Context, key string, listed bool, opts minio.StatObjectOptions) (Object, error) {
	rel := v.listedPath(key)
	info, err := v.client.StatObject(ctx, v.loc.Bucket, key, opts)
	if minio.ToErrorResponse(err).StatusCode == http.StatusPreconditionFailed {
		return Object{}, fmt.Errorf("read %s%s: replaced since it was listed: %w", v.loc, rel, ErrNotFound)
	}
	if err != nil {
		err = v.wrapKey("stat", rel, listed, err)
		if listed && errors.Is(err, ErrNotFound) && v.lists(ctx, key) {
			// Gone since the listing is the common case; a key the store
			// still lists but answers 404 for is one it cannot serve
			// (a server that rewrites the key it is asked for), and
			// would otherwise be found, and missed, on every listing.
			return Object{}, fmt.Errorf("stat %s%s: the store lists this key but answers that it does not exist (%w: a listed file this store will not serve)", v.loc, rel, ErrRefused)
		}
		return Object{}, err
	}
	return Object{Path: rel, Size: info.Size, Modified: info.LastModified.UTC(), ETag: strings.Trim(info.ETag, `"`)}, nil
}

// ErrTooLarge is ReadListed's error for a file over its limit.
var ErrTooLarge = errors.New("file larger than the limit")

// ReadListed reads a listed file whole with one GET (no HEAD first: for
// small files that halves the requests), in the version etag names when
// it is set: a file replaced since the listing is ErrNotFound, as a file
// gone is, and the next listing finds the new version. A file over limit
// bytes is ErrTooLarge.
func (v *Volume) ReadListed(ctx context.Context, rel, etag string, limit int64) ([]byte, error) {
	key := v.ListedKey(rel)
	opts := minio.GetObjectOptions{}
	if etag != "" {
		if err := opts.SetMatchETag(etag); err != nil {
			return nil, fmt.Errorf("read %s%s: %w", v.loc, rel, err)
		}
	}
	obj, err := v.client.GetObject(ctx, v.loc.Bucket, key, opts)
	if err != nil {
		return nil, v.wrapKey("read", rel, true, err)
	}
	defer obj.Close()
	data, err := io.ReadAll(io.LimitReader(obj, limit+1))
	if err != nil {
		if minio.ToErrorResponse(err).StatusCode == http.StatusPreconditionFailed {
			return nil, fmt.Errorf("read %s%s: replaced since it was listed: %w", v.loc, rel, ErrNotFound)
		}
		err = v.wrapKey("read", rel, true, err)
		if errors.Is(err, ErrNotFound) && v.lists(ctx, key) {
			return nil, fmt.Errorf("read %s%s: the store lists this key but answers that it does not exist (%w: a listed file this store will not serve)", v.loc, rel, ErrRefused)
		}
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("read %s%s: %w of %d bytes", v.loc, rel, ErrTooLarge, limit)
	}
	return data, nil
}

// lists reports whether a listing of the bucket shows exactly key (false
// when it cannot tell).
func (v *Volume) lists(ctx context.Context, key string) bool {
	// The iterator stops at the first key (ListObjects' goroutine would
	// fetch another page, and block for good once nobody reads it).
	for o := range v.client.ListObjectsIter(ctx, v.loc.Bucket, minio.ListObjectsOptions{Prefix: key, Recursive: true, MaxKeys: 1}) {
		// The key itself sorts first of all keys it prefixes.
		return o.Err == nil && o.Key == key
	}
	return false
}

// File is an open volume file: a streaming reader that also reads at
// offsets (for Parquet footers).
type File interface {
	io.Reader
	io.ReaderAt
	io.Closer
}

// OpenFile opens a file named by a typed path (see Key) for reading; data
// is fetched as it is read.
func (v *Volume) OpenFile(ctx context.Context, rel string) (File, Object, error) {
	key, err := v.Key(rel)
	if err != nil {
		return nil, Object{}, err
	}
	obj, err := v.stat(ctx, key, false)
	if err != nil {
		return nil, Object{}, err
	}
	f, err := v.client.GetObject(ctx, v.loc.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, Object{}, v.wrapKey("read", obj.Path, false, err)
	}
	return f, obj, nil
}

// OpenListed opens a listed file (see ListedKey) for reading; data is
// fetched as it is read. With etag set it reads the version the listing
// saw: a file replaced since is ErrNotFound, as a file gone is, and the
// next listing finds the new version (a load recorded under the listed
// version with the new one's rows would load those rows again then). The
// reads are of the version the open found in any case, however the file
// changes meanwhile. A key the store will not serve is ErrRefused.
func (v *Volume) OpenListed(ctx context.Context, rel, etag string) (File, Object, error) {
	key := v.ListedKey(rel)
	// The store compares (If-Match): its listing and its HEAD may spell
	// one version's ETag differently.
	sopts := minio.StatObjectOptions{}
	if etag != "" {
		if err := sopts.SetMatchETag(etag); err != nil {
			return nil, Object{}, fmt.Errorf("read %s%s: %w", v.loc, rel, err)
		}
	}
	obj, err := v.statWith(ctx, key, true, sopts)
	if err != nil {
		return nil, Object{}, err
	}
	opts := minio.GetObjectOptions{}
	if obj.ETag != "" {
		// minio-go pins the version of its first response for the reads
		// after it; this pins the first to the version stat saw.
		if err := opts.SetMatchETag(obj.ETag); err != nil {
			return nil, Object{}, fmt.Errorf("read %s%s: %w", v.loc, obj.Path, err)
		}
	}
	f, err := v.client.GetObject(ctx, v.loc.Bucket, key, opts)
	if err != nil {
		return nil, Object{}, v.wrapKey("read", obj.Path, true, err)
	}
	return &listedFile{Object: f, v: v, rel: obj.Path}, obj, nil
}

// listedFile marks the read errors of a listed file that refuse its key
// (the GET refused where the HEAD passed) with ErrRefused; any other
// error passes unchanged, so that callers still tell network trouble.
type listedFile struct {
	*minio.Object
	v   *Volume
	rel string
}

func (f *listedFile) Read(p []byte) (int, error) {
	n, err := f.Object.Read(p)
	return n, f.check(err)
}

func (f *listedFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.Object.ReadAt(p, off)
	return n, f.check(err)
}

func (f *listedFile) check(err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	resp := minio.ToErrorResponse(err)
	if resp.StatusCode == http.StatusPreconditionFailed {
		return fmt.Errorf("read %s%s: replaced while it was read: %w", f.v.loc, f.rel, ErrNotFound)
	}
	if !refusedKey(resp) {
		return err
	}
	return f.v.wrapKey("read", f.rel, true, err)
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

// Remove deletes a file named by a typed path (see Key); deleting a
// missing file is not an error.
func (v *Volume) Remove(ctx context.Context, rel string) error {
	key, err := v.Key(rel)
	if err != nil {
		return err
	}
	return v.remove(ctx, key, false)
}

// RemoveListed deletes a listed file (see ListedKey); deleting a missing
// file is not an error. A key the store will not delete is ErrRefused.
func (v *Volume) RemoveListed(ctx context.Context, rel string) error {
	return v.remove(ctx, v.ListedKey(rel), true)
}

func (v *Volume) remove(ctx context.Context, key string, listed bool) error {
	if err := v.client.RemoveObject(ctx, v.loc.Bucket, key, minio.RemoveObjectOptions{}); err != nil {
		return v.wrapKey("delete", v.listedPath(key), listed, err)
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

// ErrDenied marks what no retry fixes on the storage side, for a whole
// volume: the endpoint refused the connection's credentials, or the bucket
// does not exist.
var ErrDenied = errors.New("denied by the storage endpoint")

// wrapKey is wrap for a request about one key. For a listed key, a client
// error that is not about the credentials, the bucket or a missing file
// can only be about the key itself (the listing reached the bucket with
// the same credentials): it is ErrRefused, which no retry fixes.
func (v *Volume) wrapKey(op, rel string, listed bool, err error) error {
	werr := v.wrap(op, rel, err)
	if listed && refusedKey(minio.ToErrorResponse(err)) {
		return fmt.Errorf("%w (%w: a listed file this store will not serve)", werr, ErrRefused)
	}
	return werr
}

// refusedKey reports whether an S3 error response refuses the request's
// key: a 4xx that is not about auth, a missing object or bucket, a
// precondition, a conflict or throttling (those are not the key's fault,
// or may pass). minio-go's own checks of a key (XMinioInvalidObjectName,
// InvalidArgument) are 400s too.
func refusedKey(resp minio.ErrorResponse) bool {
	switch resp.Code {
	case "NoSuchKey", "NoSuchBucket", "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied",
		"InvalidSecretKey", "XAdminUserNotFound", "SlowDown", "RequestTimeout", "ExpiredToken", "RequestTimeTooSkewed":
		return false
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusRequestTimeout,
		http.StatusConflict, http.StatusPreconditionFailed, http.StatusTooManyRequests:
		return false
	}
	return resp.StatusCode >= 400 && resp.StatusCode < 500
}

// wrap turns S3 errors into messages that name the object and the fix,
// never the secret.
func (v *Volume) wrap(op, rel string, err error) error {
	resp := minio.ToErrorResponse(err)
	what := v.loc.String() + rel
	switch resp.Code {
	case "NoSuchKey":
		return fmt.Errorf("%s %s: %w", op, what, ErrNotFound)
	case "NoSuchBucket":
		return fmt.Errorf("%s %s: bucket %q does not exist: %w", op, what, v.loc.Bucket, ErrDenied)
	case "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "InvalidSecretKey",
		// versitygw answers an unknown access id with a 404 and this code.
		"XAdminUserNotFound":
		return fmt.Errorf("%s %s: the endpoint refused storage connection %s (%s): check its ACCESS_ID and ACCESS_KEY: %w", op, what, v.conn.Name, resp.Code, ErrDenied)
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
