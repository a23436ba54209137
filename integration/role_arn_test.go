//go:build integration

package integration

import (
	"fmt"
	"strings"
	"testing"
)

// TestConnectionRoleARN: what of ROLE_ARN can be checked without AWS. A
// connection keeps its role and STS endpoint (DESC shows them, never the
// key); reading a volume through it asks that STS endpoint for the role's
// credentials first — here the S3 server, which speaks no STS, so CREATE
// VOLUME fails with an error that names the role and the endpoint and
// shows no secret; a role on an
// OSS connection, a malformed ARN, and STS settings without a role are
// refused at CREATE.
func TestConnectionRoleARN(t *testing.T) {
	s := newStack(t)
	conn := "it_role_" + s.ID
	const arn = "arn:aws:iam::123456789012:role/lakepipe-reader"
	s.run(fmt.Sprintf(`CREATE STORAGE CONNECTION %s TYPE S3 ENDPOINT = '%s' ACCESS_ID = '%s' ACCESS_KEY = '%s' REGION = '%s' ROLE_ARN = '%s' STS_ENDPOINT = '%s'`,
		conn, s3Endpoint, s3AccessKey, s3SecretKey, s3Region, arn, s3Endpoint))
	s.dropAtEnd("STORAGE CONNECTION", conn)
	d := map[string]string{}
	for _, r := range table(s.run(`DESC STORAGE CONNECTION ` + conn)) {
		d[r[0]] = r[1]
	}
	if d["role_arn"] != arn || d["sts_endpoint"] != s3Endpoint || d["access_key"] != "********" {
		t.Fatalf("DESC STORAGE CONNECTION: %v", d)
	}
	// CREATE VOLUME reads the location through the connection: the role
	// is asked for first.
	err := s.runErr(fmt.Sprintf(`CREATE EXTERNAL VOLUME role_vol LOCATION '%s' USING CONNECTION %s DIRECTORY = (ENABLE = TRUE) RECURSIVE = TRUE`, s.location("role"), conn))
	if err == nil {
		s.dropAtEnd("VOLUME", "role_vol")
		t.Fatal("a volume was read through a role that no STS grants")
	}
	t.Logf("CREATE VOLUME through the role: %v", err)
	for _, want := range []string{"assume role " + arn, "through STS at " + s3Endpoint} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), s3SecretKey) {
		t.Fatalf("the error shows the connection's secret: %v", err)
	}
	s.mustFail(fmt.Sprintf(`CREATE STORAGE CONNECTION bad_%s TYPE OSS ENDPOINT = 'oss-cn-hangzhou.aliyuncs.com' ACCESS_ID = 'a' ACCESS_KEY = 'b' ROLE_ARN = 'acs:ram::1:role/r'`, s.ID), "ROLE_ARN on a OSS connection")
	s.mustFail(fmt.Sprintf(`CREATE STORAGE CONNECTION bad_%s TYPE S3 ENDPOINT = 'x' ACCESS_ID = 'a' ACCESS_KEY = 'b' ROLE_ARN = 'reader'`, s.ID), "expected an ARN")
	s.mustFail(fmt.Sprintf(`CREATE STORAGE CONNECTION bad_%s TYPE S3 ENDPOINT = 'x' ACCESS_ID = 'a' ACCESS_KEY = 'b' STS_ENDPOINT = 'https://sts.example.com'`, s.ID), "go with ROLE_ARN")
}
