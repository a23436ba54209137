// Package sqs reads an Amazon SQS queue (or a server that speaks its query
// protocol, such as goaws) through the AWS query API, signed with
// Signature Version 4: ReceiveMessage and DeleteMessageBatch, all lakepipe
// needs to take S3 event notifications from a queue. A small client of
// its own instead of the AWS SDK: the SDK's current SQS client speaks only
// the JSON protocol, which the SQS servers installable here do not, and it
// would bring a module tree for two calls.
package sqs

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// MaxResponseBytes bounds a response read from the queue: ten messages of
// SQS's largest (256 KiB), with their envelope.
const MaxResponseBytes = 4 << 20

// Client reads one queue.
type Client struct {
	// QueueURL is the queue's URL (https://sqs.<region>.amazonaws.com/<account>/<name>).
	QueueURL string
	Region   string
	Creds    Credentials
	HTTP     *http.Client
	now      func() time.Time
}

// New makes a client of queueURL. region "" is taken from an AWS queue
// URL's host (sqs.<region>.amazonaws.com), else us-east-1.
func New(queueURL, region string, creds Credentials) (*Client, error) {
	u, err := url.Parse(queueURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.Trim(u.Path, "/") == "" {
		return nil, fmt.Errorf("SQS queue URL %q: expected https://sqs.<region>.amazonaws.com/<account>/<queue>", queueURL)
	}
	if region == "" {
		region = "us-east-1"
		if parts := strings.Split(u.Hostname(), "."); len(parts) >= 4 && parts[0] == "sqs" {
			region = parts[1]
		}
	}
	return &Client{QueueURL: queueURL, Region: region, Creds: creds, HTTP: &http.Client{Timeout: 60 * time.Second}, now: time.Now}, nil
}

// Message is one received message.
type Message struct {
	ID            string `xml:"MessageId"`
	ReceiptHandle string `xml:"ReceiptHandle"`
	Body          string `xml:"Body"`
}

// Receive long-polls for up to n messages (1-10), waiting up to wait
// (at most 20 s) for the first.
func (c *Client) Receive(ctx context.Context, n int, wait time.Duration) ([]Message, error) {
	v := url.Values{}
	v.Set("Action", "ReceiveMessage")
	v.Set("MaxNumberOfMessages", strconv.Itoa(min(max(n, 1), 10)))
	v.Set("WaitTimeSeconds", strconv.Itoa(min(int(wait/time.Second), 20)))
	var out struct {
		Messages []Message `xml:"ReceiveMessageResult>Message"`
	}
	if err := c.call(ctx, v, &out); err != nil {
		return nil, fmt.Errorf("receive from %s: %w", c.QueueURL, err)
	}
	return out.Messages, nil
}

// Send puts one message on the queue (tests and tools; lakepipe only
// reads).
func (c *Client) Send(ctx context.Context, body string) error {
	v := url.Values{}
	v.Set("Action", "SendMessage")
	v.Set("MessageBody", body)
	var out struct{}
	if err := c.call(ctx, v, &out); err != nil {
		return fmt.Errorf("send to %s: %w", c.QueueURL, err)
	}
	return nil
}

// Delete removes messages by receipt handle (at most ten).
func (c *Client) Delete(ctx context.Context, handles []string) error {
	if len(handles) == 0 {
		return nil
	}
	v := url.Values{}
	v.Set("Action", "DeleteMessageBatch")
	for i, h := range handles {
		n := strconv.Itoa(i + 1)
		v.Set("DeleteMessageBatchRequestEntry."+n+".Id", "m"+n)
		v.Set("DeleteMessageBatchRequestEntry."+n+".ReceiptHandle", h)
	}
	var out struct {
		Failed []struct {
			ID      string `xml:"Id"`
			Code    string `xml:"Code"`
			Message string `xml:"Message"`
		} `xml:"DeleteMessageBatchResult>BatchResultErrorEntry"`
	}
	if err := c.call(ctx, v, &out); err != nil {
		return fmt.Errorf("delete from %s: %w", c.QueueURL, err)
	}
	if len(out.Failed) > 0 {
		return fmt.Errorf("delete from %s: %d of %d messages not deleted: %s %s", c.QueueURL, len(out.Failed), len(handles), out.Failed[0].Code, out.Failed[0].Message)
	}
	return nil
}

// APIError is an error the queue answered.
type APIError struct {
	Status        int
	Code, Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("SQS %d %s: %s", e.Status, e.Code, e.Message)
}

func (c *Client) call(ctx context.Context, v url.Values, out any) error {
	v.Set("QueueUrl", c.QueueURL)
	v.Set("Version", "2012-11-05")
	body := []byte(v.Encode())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.QueueURL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	sign(req, body, c.Creds, c.Region, "sqs", c.now())
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return err
	}
	if len(raw) > MaxResponseBytes {
		return fmt.Errorf("the answer is larger than %d bytes", MaxResponseBytes)
	}
	if resp.StatusCode/100 != 2 {
		return parseError(resp.StatusCode, raw)
	}
	return ParseResponse(raw, out)
}

// ParseResponse decodes a query-protocol answer into out.
func ParseResponse(raw []byte, out any) error {
	if err := xml.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("unreadable answer: %w", err)
	}
	return nil
}

func parseError(status int, raw []byte) error {
	var e struct {
		Code    string `xml:"Error>Code"`
		Message string `xml:"Error>Message"`
	}
	if xml.Unmarshal(raw, &e) != nil || e.Code == "" {
		msg := strings.TrimSpace(string(raw))
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		return &APIError{Status: status, Code: http.StatusText(status), Message: msg}
	}
	return &APIError{Status: status, Code: e.Code, Message: e.Message}
}

// Permanent says whether err is the queue refusing the request for good
// (a wrong queue URL, credentials or permissions), not an outage.
func Permanent(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status/100 == 4 && ae.Status != http.StatusTooManyRequests && !strings.Contains(ae.Code, "Throttl")
}
