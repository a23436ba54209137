package httpauth

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestAuthorized(t *testing.T) {
	basic := func(user, pass string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	}
	for _, tc := range []struct {
		auth, token string
		want        bool
	}{
		{"Bearer s3cret", "s3cret", true},
		{"bearer  s3cret ", "s3cret", true},
		{"s3cret", "s3cret", true},
		{basic("lakepipe", "s3cret"), "s3cret", true},
		{basic("s3cret", "x"), "s3cret", false},
		{"Bearer wrong", "s3cret", false},
		{"", "s3cret", false},
		{"Basic !!!", "s3cret", false},
		{"", "", false},
		{"Bearer ", "", false},
	} {
		if got := Authorized(tc.auth, tc.token); got != tc.want {
			t.Errorf("Authorized(%q, %q) = %v, want %v", tc.auth, tc.token, got, tc.want)
		}
	}
}

func TestRequire(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	for _, tc := range []struct {
		token, auth string
		want        int
	}{
		{"", "", http.StatusOK},
		{"t", "", http.StatusUnauthorized},
		{"t", "Bearer t", http.StatusOK},
		{"t", "Bearer u", http.StatusUnauthorized},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		Require(tc.token, ok).ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("token %q auth %q: %d, want %d", tc.token, tc.auth, rec.Code, tc.want)
		}
	}
}
