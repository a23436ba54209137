// Package deploy holds lakepipe's deployment material, none of it Go: the
// container image (docker/), Kubernetes manifests (k8s/), a Docker Compose
// stack (compose/), the Grafana dashboard (grafana/) and the local stack's
// scripts (local/). Its test checks that material against the code: that
// it parses, that its LAKEPIPE_* variables and flags are ones the commands
// read, that its references (Secrets, ports, services, files) resolve, and
// that the dashboard queries metrics that are registered. It needs no
// Docker and no cluster: go test ./deploy/.
package deploy
