package tunnel

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Client talks to one write service (`lakepipe serve`). It is safe for
// concurrent use; sessions and packs made from it share its HTTP client.
type Client struct {
	endpoint string // scheme://host[:port][/prefix], without a trailing slash
	token    string
	hc       *http.Client
	schema   string
}

// Option configures a Client.
type Option func(*Client)

// WithToken sets the bearer token sent as `Authorization: Bearer <token>`
// on every request. The token never appears in errors or String output.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithHTTPClient replaces the HTTP client. The default keeps up to 64 idle
// connections to the server, so that many packs may flush at once, and
// has no overall timeout: flushes are bounded by their own timeout and
// other calls by their context.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithSchema sets the schema (database) used when a session is asked for
// with schema "". Without it, "" means the server's default schema.
func WithSchema(schema string) Option { return func(c *Client) { c.schema = schema } }

// New returns a client of the write service at endpoint, an http or https
// URL (a path prefix is kept: "http://gw:8080/lakepipe"). New does not
// contact the server.
func New(endpoint string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(endpoint))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("tunnel: endpoint must be an http(s)://host[:port] URL")
	}
	if u.User != nil {
		return nil, fmt.Errorf("tunnel: endpoint %s must not hold credentials; use WithToken", u.Redacted())
	}
	u.RawQuery, u.Fragment = "", ""
	c := &Client{endpoint: strings.TrimRight(u.String(), "/")}
	for _, o := range opts {
		o(c)
	}
	if c.hc == nil {
		c.hc = defaultHTTPClient()
	}
	return c, nil
}

func defaultHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 64
	t.MaxIdleConnsPerHost = 64
	// Flush bodies are large: fewer, larger writes to the socket.
	t.WriteBufferSize = 256 << 10
	return &http.Client{Transport: t}
}

// Endpoint returns the endpoint URL the client was made with.
func (c *Client) Endpoint() string { return c.endpoint }

// String describes the client without its token.
func (c *Client) String() string {
	auth := "no token"
	if c.token != "" {
		auth = "token set"
	}
	return fmt.Sprintf("tunnel.Client(%s, %s)", c.endpoint, auth)
}

func (c *Client) streamURL(id string, suffix string) string {
	u := c.endpoint + "/v1/streams"
	if id != "" {
		u += "/" + url.PathEscape(id)
	}
	return u + suffix
}

func (c *Client) newRequest(ctx context.Context, method, u string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "lakepipe-tunnel-go")
	return req, nil
}

// doJSON sends one control request (no retries: creating a session is not
// idempotent) and decodes a success answer into out.
func (c *Client) doJSON(ctx context.Context, method, u string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := c.newRequest(ctx, method, u, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.transportError(err)
	}
	defer drainClose(resp.Body)
	if resp.StatusCode/100 != 2 {
		return c.answerError(resp)
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(out); err != nil {
		return fmt.Errorf("tunnel: decode %s answer: %w", method, err)
	}
	return nil
}

// answerError builds the *Error of a non-2xx answer.
func (c *Client) answerError(resp *http.Response) *Error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := &Error{Status: resp.StatusCode, TraceID: resp.Header.Get(HeaderTraceID)}
	var eb ErrorBody
	if json.Unmarshal(raw, &eb) == nil && (eb.Error.Code != "" || eb.Error.Message != "") {
		e.Code, e.Message = eb.Error.Code, eb.Error.Message
		if eb.Error.TraceID != "" {
			e.TraceID = eb.Error.TraceID
		}
	} else {
		msg := strings.TrimSpace(string(raw))
		if len(msg) > 512 {
			msg = msg[:512] + "…"
		}
		e.Message = msg
	}
	e.Message = c.redact(e.Message)
	return e
}

// transportError wraps an error of the HTTP client (no answer).
func (c *Client) transportError(err error) error {
	if c.token != "" && strings.Contains(err.Error(), c.token) {
		return &redactedError{msg: c.redact(err.Error()), err: err}
	}
	return err
}

// redactedError is an error whose text held the token: it prints the text
// without it and still unwraps to the original.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redact removes the token from text that came from elsewhere (a server
// echoing headers, say).
func (c *Client) redact(s string) string {
	if c.token == "" {
		return s
	}
	return strings.ReplaceAll(s, c.token, "[token]")
}

func drainClose(r io.ReadCloser) {
	io.Copy(io.Discard, io.LimitReader(r, 64<<10))
	r.Close()
}
