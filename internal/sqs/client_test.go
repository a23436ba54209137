package sqs

import (
	"strings"
	"testing"
)

func TestParseReceive(t *testing.T) {
	raw := `<ReceiveMessageResponse><ReceiveMessageResult>
<Message><MessageId>m1</MessageId><ReceiptHandle>h1</ReceiptHandle><Body>{&quot;Records&quot;:[]}</Body></Message>
<Message><MessageId>m2</MessageId><ReceiptHandle>h2</ReceiptHandle><Body>b</Body></Message>
</ReceiveMessageResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></ReceiveMessageResponse>`
	var out struct {
		Messages []Message `xml:"ReceiveMessageResult>Message"`
	}
	if err := ParseResponse([]byte(raw), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 2 || out.Messages[0].Body != `{"Records":[]}` || out.Messages[1].ReceiptHandle != "h2" {
		t.Fatalf("messages %+v", out.Messages)
	}
	err := parseError(400, []byte(`<ErrorResponse><Error><Type>Sender</Type><Code>AWS.SimpleQueueService.NonExistentQueue</Code><Message>no queue</Message></Error></ErrorResponse>`))
	if !strings.Contains(err.Error(), "NonExistentQueue") || !Permanent(err) {
		t.Fatalf("error %v (permanent %v)", err, Permanent(err))
	}
	if Permanent(parseError(503, []byte("busy"))) {
		t.Fatal("a 503 is not permanent")
	}
}

func TestNewRegion(t *testing.T) {
	c, err := New("https://sqs.eu-west-1.amazonaws.com/123/q", "", Credentials{})
	if err != nil || c.Region != "eu-west-1" {
		t.Fatalf("%v %v", c, err)
	}
	for _, bad := range []string{"", "sqs.amazonaws.com/1/q", "ftp://x/1/q", "https://host/"} {
		if _, err := New(bad, "", Credentials{}); err == nil {
			t.Errorf("New(%q) took it", bad)
		}
	}
}

func FuzzParseResponse(f *testing.F) {
	f.Add([]byte(`<ReceiveMessageResponse><ReceiveMessageResult><Message><Body>x</Body></Message></ReceiveMessageResult></ReceiveMessageResponse>`))
	f.Add([]byte(`<ErrorResponse><Error><Code>c</Code></Error></ErrorResponse>`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var out struct {
			Messages []Message `xml:"ReceiveMessageResult>Message"`
		}
		_ = ParseResponse(raw, &out)
		_ = parseError(400, raw)
	})
}
