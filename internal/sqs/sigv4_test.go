package sqs

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// AWS's published Signature Version 4 test suite (get-vanilla,
// get-vanilla-query-order-key-case): if these hold, the canonical request,
// the key derivation and the final HMAC are right.
func TestSignV4Vectors(t *testing.T) {
	creds := Credentials{AccessKey: "AKIDEXAMPLE", SecretKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}
	at := time.Date(2015, 8, 30, 12, 36, 0, 0, time.UTC)
	for _, tc := range []struct{ url, sig string }{
		{"https://example.amazonaws.com/", "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"},
		{"https://example.amazonaws.com/?Param2=value2&Param1=value1", "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"},
	} {
		req, _ := http.NewRequest(http.MethodGet, tc.url, nil)
		sign(req, nil, creds, "us-east-1", "service", at)
		want := "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=" + tc.sig
		if got := req.Header.Get("Authorization"); got != want {
			t.Errorf("%s:\n got %s\nwant %s", tc.url, got, want)
		}
	}
	// A session token is signed too.
	req, _ := http.NewRequest(http.MethodGet, "https://example.amazonaws.com/", nil)
	sign(req, nil, Credentials{AccessKey: "a", SecretKey: "b", SessionToken: "tok"}, "us-east-1", "sqs", at)
	if !strings.Contains(req.Header.Get("Authorization"), "SignedHeaders=host;x-amz-date;x-amz-security-token,") {
		t.Errorf("session token not signed: %s", req.Header.Get("Authorization"))
	}
}
