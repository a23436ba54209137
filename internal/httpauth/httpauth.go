// Package httpauth checks the shared tokens lakepipe's HTTP endpoints take
// (the worker's /events and /metrics, the write service's /metrics), the
// same way everywhere.
package httpauth

import (
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"
)

// Authorized reports whether an Authorization header carries token:
// "Bearer <token>" (Prometheus' bearer_token, MinIO's auth_token), the bare
// token, or Basic with token as the password (a token in a webhook URL's
// user info). Comparisons take constant time. An empty token authorizes
// nothing.
func Authorized(auth, token string) bool {
	if token == "" {
		return false
	}
	auth = strings.TrimSpace(auth)
	got := auth
	if scheme, rest, ok := strings.Cut(auth, " "); ok {
		rest = strings.TrimSpace(rest)
		switch {
		case strings.EqualFold(scheme, "Bearer"):
			got = rest
		case strings.EqualFold(scheme, "Basic"):
			raw, err := base64.StdEncoding.DecodeString(rest)
			if err != nil {
				return false
			}
			_, got, _ = strings.Cut(string(raw), ":")
		}
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// Require serves h only to requests that carry token (see Authorized);
// others get 401. With an empty token h is served to everyone.
func Require(token string, h http.Handler) http.Handler {
	if token == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !Authorized(r.Header.Get("Authorization"), token) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="lakepipe"`)
			http.Error(w, "missing or wrong token: send Authorization: Bearer <token>", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}
