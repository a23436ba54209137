package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"
)

// root is the repository, seen from this package's directory (go test runs
// a package's tests in its directory).
const root = ".."

// pendingEnv are settings the manifests may name before the code that
// reads them lands (none now). The general rule (the code must read it)
// covers every other name.
var pendingEnv = map[string]bool{}

// sdkMetrics are the Temporal SDK's metrics the dashboard shows: name →
// kind, under the Prometheus names internal/metrics/sdk.go gives them
// (timers become <name>_seconds histograms), since the SDK, not our code,
// names them.
var sdkMetrics = map[string]string{
	"temporal_activity_execution_latency_seconds":      "histogram",
	"temporal_workflow_task_execution_latency_seconds": "histogram",
}

// sdkLabels are the tags the SDK puts on them; "le" and the labels
// Prometheus adds to every series are always allowed.
var sdkLabels = []string{"activity_type", "workflow_type", "namespace", "task_queue"}

// lakepipeCommands are the subcommands the image's containers may run.
var lakepipeCommands = map[string]bool{"worker": true, "serve": true, "sql": true}

var (
	envRe     = regexp.MustCompile(`\bLAKEPIPE_[A-Z0-9_]*[A-Z0-9]\b`)
	flagDefRe = regexp.MustCompile(`\.(?:String|Int|Int64|Uint|Uint64|Bool|Duration|Float64|Func|BoolFunc|Text)(?:Var)?\(\s*(?:&?[\w.\[\]]+,\s*)?"([a-z][a-z0-9-]*)"`)
	caseRe    = regexp.MustCompile(`case\s+((?:"[a-z-]+",?\s*)+):`)
	quotedRe  = regexp.MustCompile(`"([^"]*)"`)
	optsRe    = regexp.MustCompile(`prometheus\.(Counter|Gauge|Histogram|Summary)Opts\{([^}]*)\}`)
	optRe     = regexp.MustCompile(`\b(Namespace|Subsystem|Name):\s*"([^"]*)"`)
	descRe    = regexp.MustCompile(`prometheus\.NewDesc\(\s*"([a-zA-Z_:][a-zA-Z0-9_:]*)"`)
	labelsRe  = regexp.MustCompile(`\[\]string\{([^}]*)\}`)
)

// code is what the deployment material may refer to, read from the Go
// sources (tests excluded) of starter/, worker/ and internal/.
type code struct {
	env      map[string]bool   // LAKEPIPE_* variables named anywhere in them
	flags    map[string]bool   // flags defined in starter/
	commands map[string]bool   // subcommands of starter/main.go
	metrics  map[string]string // Prometheus metrics registered: name → counter, gauge, histogram, summary or untyped
	labels   map[string]bool   // label names declared next to them
}

var (
	codeOnce sync.Once
	codeVal  *code
	codeErr  error
)

func loadCode(t *testing.T) *code {
	t.Helper()
	codeOnce.Do(func() { codeVal, codeErr = readCode() })
	if codeErr != nil {
		t.Fatal(codeErr)
	}
	return codeVal
}

func readCode() (*code, error) {
	c := &code{env: map[string]bool{}, flags: map[string]bool{}, commands: map[string]bool{}, metrics: map[string]string{}, labels: map[string]bool{}}
	var all strings.Builder
	for _, dir := range []string{"starter", "worker", "internal"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "testdata" {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			src := string(b)
			all.WriteString(src)
			for _, m := range envRe.FindAllString(src, -1) {
				c.env[m] = true
			}
			if dir == "starter" {
				for _, m := range flagDefRe.FindAllStringSubmatch(src, -1) {
					c.flags[m[1]] = true
				}
			}
			if filepath.Base(path) == "main.go" && dir == "starter" {
				for _, m := range caseRe.FindAllStringSubmatch(src, -1) {
					for _, q := range quotedRe.FindAllStringSubmatch(m[1], -1) {
						c.commands[q[1]] = true
					}
				}
			}
			if strings.Contains(src, "prometheus.") {
				readMetrics(c, src)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if len(c.env) == 0 || len(c.flags) == 0 || len(c.commands) == 0 || len(c.metrics) == 0 {
		return nil, fmt.Errorf("read nothing useful from the sources (env %d, flags %d, commands %d, metrics %d): did they move?",
			len(c.env), len(c.flags), len(c.commands), len(c.metrics))
	}
	return c, nil
}

// readMetrics adds the metrics and label names a source registers.
func readMetrics(c *code, src string) {
	for _, m := range optsRe.FindAllStringSubmatch(src, -1) {
		parts := map[string]string{}
		for _, o := range optRe.FindAllStringSubmatch(m[2], -1) {
			parts[o[1]] = o[2]
		}
		if parts["Name"] == "" {
			continue
		}
		var name []string
		for _, k := range []string{"Namespace", "Subsystem", "Name"} {
			if parts[k] != "" {
				name = append(name, parts[k])
			}
		}
		c.metrics[strings.Join(name, "_")] = strings.ToLower(m[1])
	}
	for _, m := range descRe.FindAllStringSubmatch(src, -1) {
		c.metrics[m[1]] = "untyped"
	}
	for _, m := range labelsRe.FindAllStringSubmatch(src, -1) {
		for _, q := range quotedRe.FindAllStringSubmatch(m[1], -1) {
			c.labels[q[1]] = true
		}
	}
	// Standard collectors: only the series the dashboard uses.
	if strings.Contains(src, "collectors.NewGoCollector(") {
		c.metrics["go_goroutines"] = "gauge"
	}
	if strings.Contains(src, "collectors.NewProcessCollector(") {
		c.metrics["process_resident_memory_bytes"] = "gauge"
		c.metrics["process_cpu_seconds_total"] = "counter"
	}
}

// series are the names a PromQL query may use for the known metrics.
func (c *code) series() map[string]bool {
	s := map[string]bool{"up": true} // Prometheus's own, per target
	add := func(name, kind string) {
		switch kind {
		case "histogram":
			s[name+"_bucket"], s[name+"_sum"], s[name+"_count"] = true, true, true
		case "summary":
			s[name], s[name+"_sum"], s[name+"_count"] = true, true, true
		default:
			s[name] = true
		}
	}
	for n, k := range c.metrics {
		add(n, k)
	}
	for n, k := range sdkMetrics {
		add(n, k)
	}
	return s
}

func (c *code) allowedLabels() map[string]bool {
	l := map[string]bool{"le": true, "job": true, "instance": true}
	for k := range c.labels {
		l[k] = true
	}
	for _, k := range sdkLabels {
		l[k] = true
	}
	return l
}

// ---- helpers over decoded YAML and JSON

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func listOf(v any) []any {
	l, _ := v.([]any)
	return l
}

func str(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// get walks nested maps by key.
func get(v any, keys ...string) any {
	for _, k := range keys {
		v = mapOf(v)[k]
	}
	return v
}

func rel(path string) string {
	if r, err := filepath.Rel(root, path); err == nil {
		return r
	}
	return path
}

// readYAML decodes every document of a (multi-document) YAML file.
func readYAML(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var docs []map[string]any
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", rel(path), err)
		}
		if d != nil {
			docs = append(docs, d)
		}
	}
	if len(docs) == 0 {
		t.Errorf("%s: no YAML document", rel(path))
	}
	return docs
}

// files lists the files under dir whose names end with one of exts.
func files(t *testing.T, dir string, exts ...string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		for _, e := range exts {
			if !d.IsDir() && strings.HasSuffix(d.Name(), e) {
				out = append(out, path)
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// checkEnvText checks every LAKEPIPE_* name in a file's text, comments
// included (a commented-out setting gets uncommented one day): the code
// reads it, or it is one of pendingEnv.
func checkEnvText(t *testing.T, c *code, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(b), "\n") {
		for _, name := range envRe.FindAllString(line, -1) {
			if !c.env[name] && !pendingEnv[name] {
				t.Errorf("%s:%d: %s is not read anywhere in starter/, worker/ or internal/", rel(path), i+1, name)
			}
		}
	}
}

// checkArgs checks a lakepipe command line (without the program name):
// a known subcommand and flags that command defines. It returns the port
// of the address given to --http or --listen, if any.
func checkArgs(t *testing.T, c *code, where string, args []string) (port string) {
	t.Helper()
	if len(args) == 0 {
		t.Errorf("%s: no lakepipe command given", where)
		return ""
	}
	if !lakepipeCommands[args[0]] || !c.commands[args[0]] {
		t.Errorf("%s: %q is not a lakepipe command", where, args[0])
	}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !c.flags[name] {
			t.Errorf("%s: flag --%s is not defined in starter/", where, name)
			continue
		}
		if name != "http" && name != "listen" {
			continue
		}
		if !hasVal && i+1 < len(args) {
			val = args[i+1]
		}
		_, p, ok := strings.Cut(val, ":")
		if !ok || p == "" {
			t.Errorf("%s: --%s %q has no port", where, name, val)
		}
		if host, _, _ := strings.Cut(val, ":"); host == "127.0.0.1" || host == "localhost" {
			t.Errorf("%s: --%s %q listens on loopback only: nothing outside the container can reach it", where, name, val)
		}
		port = p
	}
	return port
}

// ---- the container image

func TestDockerfile(t *testing.T) {
	c := loadCode(t)
	path := filepath.Join(root, "deploy", "docker", "Dockerfile")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	checkEnvText(t, c, path)
	// Join continuation lines, drop comments.
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	var stages [][]string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(strings.ToUpper(line), "FROM ") {
			stages = append(stages, nil)
		}
		if len(stages) > 0 {
			stages[len(stages)-1] = append(stages[len(stages)-1], line)
		}
	}
	if len(stages) < 2 {
		t.Fatalf("%s: want a multi-stage build, found %d stage(s)", rel(path), len(stages))
	}
	built := false
	for _, st := range stages[:len(stages)-1] {
		for _, l := range st {
			if strings.HasPrefix(l, "RUN ") && strings.Contains(l, "go build") && strings.Contains(l, "./starter") &&
				regexp.MustCompile(`-o\s+\S*/lakepipe\b`).MatchString(l) {
				built = true
			}
		}
	}
	if !built {
		t.Errorf("%s: no build stage runs `go build -o …/lakepipe ./starter`", rel(path))
	}
	final := stages[len(stages)-1]
	if base := strings.Fields(final[0])[1]; !strings.Contains(base, "distroless") && !strings.Contains(base, "-slim") {
		t.Errorf("%s: runtime image %s is neither distroless nor debian-slim", rel(path), base)
	}
	var user, entry, cmd string
	copied := false
	for _, l := range final {
		switch kw, rest, _ := strings.Cut(l, " "); strings.ToUpper(kw) {
		case "USER":
			user = strings.TrimSpace(rest)
		case "ENTRYPOINT":
			entry = rest
		case "CMD":
			cmd = rest
		case "COPY":
			copied = copied || strings.Contains(rest, "--from=")
		}
	}
	if u, _, _ := strings.Cut(user, ":"); u == "" || u == "root" || u == "0" {
		t.Errorf("%s: the runtime stage must run as a non-root USER, has %q", rel(path), user)
	}
	if !copied {
		t.Errorf("%s: the runtime stage copies nothing from the build stage", rel(path))
	}
	if !strings.Contains(entry, "lakepipe") {
		t.Errorf("%s: ENTRYPOINT %s does not run lakepipe", rel(path), entry)
	}
	var args []string
	if err := json.Unmarshal([]byte(cmd), &args); err != nil {
		t.Errorf("%s: CMD %s is not an exec-form JSON array: %v", rel(path), cmd, err)
	} else {
		checkArgs(t, c, rel(path)+" CMD", args)
	}

	// The ignore file must keep what the build needs.
	ign, err := os.ReadFile(path + ".dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	needed := map[string]bool{"go.mod": true, "go.sum": true}
	for _, d := range []string{"starter", "worker", "internal", "workflows", "activities", "schemas", "tunnel"} {
		needed[d] = true
	}
	for _, line := range strings.Split(string(ign), "\n") {
		p := strings.Trim(strings.TrimSpace(line), "/")
		if needed[p] || p == "*" || p == "**" {
			t.Errorf("%s.dockerignore: %q leaves out what go build ./starter needs", rel(path), line)
		}
	}
}

// ---- Kubernetes

type k8sObject struct {
	file string
	doc  map[string]any
}

func (o k8sObject) kind() string { return str(o.doc["kind"]) }
func (o k8sObject) name() string { return str(get(o.doc, "metadata", "name")) }
func (o k8sObject) where() string {
	return fmt.Sprintf("%s (%s %s)", o.file, o.kind(), o.name())
}

// podLabels are a Deployment's pod template labels.
func podLabels(o k8sObject) map[string]any {
	return mapOf(get(o.doc, "spec", "template", "metadata", "labels"))
}

func subset(sel, labels map[string]any) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if str(labels[k]) != str(v) {
			return false
		}
	}
	return true
}

// containerPorts maps a container's port names and numbers to the number.
func containerPorts(ctr map[string]any) map[string]string {
	ports := map[string]string{}
	for _, p := range listOf(ctr["ports"]) {
		n := str(get(p, "containerPort"))
		ports[n] = n
		if name := str(get(p, "name")); name != "" {
			ports[name] = n
		}
	}
	return ports
}

func TestKubernetes(t *testing.T) {
	c := loadCode(t)
	dir := filepath.Join(root, "deploy", "k8s")
	kustPath := filepath.Join(dir, "kustomization.yaml")
	kust := readYAML(t, kustPath)[0]
	if str(kust["kind"]) != "Kustomization" {
		t.Fatalf("%s: kind %q", rel(kustPath), kust["kind"])
	}
	ns := str(kust["namespace"])
	if ns == "" {
		t.Errorf("%s: no namespace", rel(kustPath))
	}
	resources := map[string]bool{}
	for _, r := range listOf(kust["resources"]) {
		resources[str(r)] = true
		if _, err := os.Stat(filepath.Join(dir, str(r))); err != nil {
			t.Errorf("%s: resource %s: %v", rel(kustPath), r, err)
		}
	}
	images := map[string]bool{}
	for _, im := range listOf(kust["images"]) {
		images[str(get(im, "name"))] = true
	}

	var objs []k8sObject
	index := map[string]k8sObject{}
	for _, path := range files(t, dir, ".yaml", ".yml") {
		checkEnvText(t, c, path)
		base := filepath.Base(path)
		if base == "kustomization.yaml" {
			continue
		}
		template := strings.Contains(base, ".template.")
		switch {
		case template && resources[base]:
			t.Errorf("%s: a template must stay out of kustomization.yaml (applying it would reset credentials)", rel(path))
		case !template && !resources[base]:
			t.Errorf("%s: not listed in kustomization.yaml's resources", rel(path))
		}
		for _, d := range readYAML(t, path) {
			o := k8sObject{file: rel(path), doc: d}
			if str(d["apiVersion"]) == "" || o.kind() == "" || o.name() == "" {
				t.Errorf("%s: a document without apiVersion, kind or metadata.name", o.file)
				continue
			}
			// Explicit namespaces, so that kubectl apply -f works as well as -k.
			if got := str(get(d, "metadata", "namespace")); o.kind() != "Namespace" && got != ns {
				t.Errorf("%s: metadata.namespace %q, want %q", o.where(), got, ns)
			}
			key := o.kind() + "/" + o.name()
			if _, dup := index[key]; dup {
				t.Errorf("%s: %s defined twice", o.where(), key)
			}
			index[key] = o
			objs = append(objs, o)
		}
	}
	if _, ok := index["Namespace/"+ns]; !ok {
		t.Errorf("no Namespace %s", ns)
	}

	secretKeys := func(name string) map[string]bool {
		o, ok := index["Secret/"+name]
		if !ok {
			return nil
		}
		keys := map[string]bool{}
		for _, f := range []string{"stringData", "data"} {
			for k := range mapOf(o.doc[f]) {
				keys[k] = true
			}
		}
		return keys
	}

	var deployments []k8sObject
	commands := map[string]k8sObject{}
	for _, o := range objs {
		switch o.kind() {
		case "ConfigMap":
			for k := range mapOf(o.doc["data"]) {
				if !envRe.MatchString(k) || !c.env[k] && !pendingEnv[k] {
					t.Errorf("%s: key %s is not a LAKEPIPE_* setting the code reads", o.where(), k)
				}
				if regexp.MustCompile(`PASSWORD|TOKEN|SECRET|API_KEY|CODEC_KEY`).MatchString(k) {
					t.Errorf("%s: %s is a credential: it belongs in the Secret", o.where(), k)
				}
			}
		case "Secret":
			for k := range secretKeys(o.name()) {
				if !c.env[k] && !pendingEnv[k] {
					t.Errorf("%s: key %s is not a setting the code reads", o.where(), k)
				}
			}
		case "Deployment":
			deployments = append(deployments, o)
			cmd := checkDeployment(t, c, o, index, images, secretKeys)
			if cmd != "" {
				commands[cmd] = o
			}
		}
	}
	for _, want := range []string{"worker", "serve"} {
		if _, ok := commands[want]; !ok {
			t.Errorf("no Deployment runs `lakepipe %s`", want)
		}
	}
	if _, ok := index["ConfigMap/lakepipe"]; !ok {
		t.Error("no ConfigMap lakepipe")
	}
	if _, ok := index["Secret/lakepipe"]; !ok {
		t.Error("no Secret lakepipe (template)")
	}

	// Services and PodDisruptionBudgets select pods of a Deployment.
	selected := func(o k8sObject, sel map[string]any) []k8sObject {
		var out []k8sObject
		for _, d := range deployments {
			if subset(sel, podLabels(d)) {
				out = append(out, d)
			}
		}
		if len(out) == 0 {
			t.Errorf("%s: selector %v matches no Deployment's pods", o.where(), sel)
		}
		return out
	}
	pdbFor := map[string]bool{}
	serviceFor := map[string]bool{}
	for _, o := range objs {
		switch o.kind() {
		case "Service":
			for _, d := range selected(o, mapOf(get(o.doc, "spec", "selector"))) {
				serviceFor[d.name()] = true
				for _, p := range listOf(get(o.doc, "spec", "ports")) {
					target := str(get(p, "targetPort"))
					if target == "" {
						target = str(get(p, "port"))
					}
					found := false
					for _, ctr := range listOf(get(d.doc, "spec", "template", "spec", "containers")) {
						_, ok := containerPorts(mapOf(ctr))[target]
						found = found || ok
					}
					if !found {
						t.Errorf("%s: targetPort %s is no container port of %s", o.where(), target, d.name())
					}
				}
			}
		case "PodDisruptionBudget":
			spec := mapOf(o.doc["spec"])
			if spec["minAvailable"] == nil && spec["maxUnavailable"] == nil {
				t.Errorf("%s: neither minAvailable nor maxUnavailable", o.where())
			}
			for _, d := range selected(o, mapOf(get(spec, "selector", "matchLabels"))) {
				pdbFor[d.name()] = true
				if min, ok := spec["minAvailable"].(int); ok {
					if r, _ := get(d.doc, "spec", "replicas").(int); min >= r {
						t.Errorf("%s: minAvailable %d with %d replicas blocks every drain", o.where(), min, r)
					}
				}
			}
		}
	}
	if w, ok := commands["worker"]; ok && !pdbFor[w.name()] {
		t.Errorf("no PodDisruptionBudget for %s", w.name())
	}
	if s, ok := commands["serve"]; ok && !serviceFor[s.name()] {
		t.Errorf("no Service for %s", s.name())
	}
}

// checkDeployment checks one Deployment and returns the lakepipe command
// its first container runs.
func checkDeployment(t *testing.T, c *code, o k8sObject, index map[string]k8sObject, images map[string]bool, secretKeys func(string) map[string]bool) string {
	t.Helper()
	spec := mapOf(o.doc["spec"])
	replicas, _ := spec["replicas"].(int)
	if replicas < 1 {
		t.Errorf("%s: replicas %v", o.where(), spec["replicas"])
	}
	if !subset(mapOf(get(spec, "selector", "matchLabels")), podLabels(o)) {
		t.Errorf("%s: selector.matchLabels are not all pod template labels", o.where())
	}
	pod := mapOf(get(spec, "template", "spec"))
	if get(pod, "securityContext", "runAsNonRoot") != true {
		t.Errorf("%s: pod securityContext.runAsNonRoot is not true", o.where())
	}
	grace, _ := pod["terminationGracePeriodSeconds"].(int)
	if grace <= 0 {
		t.Errorf("%s: no terminationGracePeriodSeconds", o.where())
	}
	if sa := str(pod["serviceAccountName"]); sa != "" {
		if _, ok := index["ServiceAccount/"+sa]; !ok {
			t.Errorf("%s: ServiceAccount %s is not defined", o.where(), sa)
		}
	}
	containers := listOf(pod["containers"])
	if len(containers) == 0 {
		t.Errorf("%s: no containers", o.where())
		return ""
	}
	command := ""
	for i, ci := range containers {
		ctr := mapOf(ci)
		where := fmt.Sprintf("%s container %s", o.where(), str(ctr["name"]))
		image := str(ctr["image"])
		name := image
		if j := strings.LastIndexAny(name, ":@"); j > strings.LastIndex(name, "/") {
			name = name[:j]
		}
		if image == "" || !images[name] {
			t.Errorf("%s: image %q is not one kustomization.yaml's images rewrites", where, image)
		}
		var args []string
		for _, a := range listOf(ctr["args"]) {
			args = append(args, str(a))
		}
		listen := checkArgs(t, c, where, args)
		if i == 0 && len(args) > 0 {
			command = args[0]
		}
		ports := containerPorts(ctr)
		if listen != "" && ports[listen] == "" {
			t.Errorf("%s: listens on %s, which is not a container port", where, listen)
		}

		for _, ef := range listOf(ctr["envFrom"]) {
			if n := str(get(ef, "configMapRef", "name")); n != "" {
				if _, ok := index["ConfigMap/"+n]; !ok {
					t.Errorf("%s: envFrom ConfigMap %s is not defined", where, n)
				}
			}
			if n := str(get(ef, "secretRef", "name")); n != "" && secretKeys(n) == nil {
				t.Errorf("%s: envFrom Secret %s is not defined", where, n)
			}
		}
		for _, e := range listOf(ctr["env"]) {
			n := str(get(e, "name"))
			if strings.HasPrefix(n, "LAKEPIPE_") && !c.env[n] && !pendingEnv[n] {
				t.Errorf("%s: env %s is not read by the code", where, n)
			}
			if ref := mapOf(get(e, "valueFrom", "secretKeyRef")); ref != nil && get(ref, "optional") != true {
				if keys := secretKeys(str(ref["name"])); !keys[str(ref["key"])] {
					t.Errorf("%s: env %s: Secret %v has no key %v", where, n, ref["name"], ref["key"])
				}
			}
			if ref := mapOf(get(e, "valueFrom", "configMapKeyRef")); ref != nil {
				cm, ok := index["ConfigMap/"+str(ref["name"])]
				if _, has := mapOf(cm.doc["data"])[str(ref["key"])]; !ok || !has {
					t.Errorf("%s: env %s: ConfigMap %v has no key %v", where, n, ref["name"], ref["key"])
				}
			}
		}

		for _, probe := range []string{"livenessProbe", "readinessProbe"} {
			p := mapOf(ctr[probe])
			if p == nil {
				t.Errorf("%s: no %s", where, probe)
				continue
			}
			port := str(get(p, "httpGet", "port"))
			if port == "" {
				port = str(get(p, "tcpSocket", "port"))
			}
			if ports[port] == "" {
				t.Errorf("%s: %s probes port %q, which is not a container port", where, probe, port)
			}
			if command == "worker" && str(get(p, "httpGet", "path")) != "/healthz" {
				t.Errorf("%s: the worker's %s should GET /healthz", where, probe)
			}
		}
		for _, k := range []string{"requests", "limits"} {
			for _, r := range []string{"cpu", "memory"} {
				if str(get(ctr, "resources", k, r)) == "" {
					t.Errorf("%s: no resources.%s.%s", where, k, r)
				}
			}
		}
		sc := mapOf(ctr["securityContext"])
		if sc["readOnlyRootFilesystem"] != true || sc["allowPrivilegeEscalation"] != false {
			t.Errorf("%s: securityContext needs readOnlyRootFilesystem: true and allowPrivilegeEscalation: false", where)
		}

		if i == 0 && command == "worker" {
			ann := mapOf(get(spec, "template", "metadata", "annotations"))
			if str(ann["prometheus.io/scrape"]) != "true" || str(ann["prometheus.io/path"]) != "/metrics" ||
				str(ann["prometheus.io/port"]) != listen {
				t.Errorf("%s: want prometheus.io/scrape \"true\", path /metrics and port %s annotations, have %v", where, listen, ann)
			}
			if replicas < 2 {
				t.Errorf("%s: %d replica(s): run at least two workers", o.where(), replicas)
			}
			// Longer than the pipe copies' 30 s heartbeat timeout.
			if grace < 30 {
				t.Errorf("%s: terminationGracePeriodSeconds %d is shorter than an activity heartbeat timeout", o.where(), grace)
			}
		}
	}
	return command
}

// ---- Docker Compose

func TestCompose(t *testing.T) {
	c := loadCode(t)
	dir := filepath.Join(root, "deploy", "compose")
	for _, path := range files(t, dir, ".yaml", ".yml") {
		checkEnvText(t, c, path)
		readYAML(t, path)
	}
	path := filepath.Join(dir, "docker-compose.yml")
	doc := readYAML(t, path)[0]
	services := mapOf(doc["services"])
	if len(services) == 0 {
		t.Fatalf("%s: no services", rel(path))
	}
	volumes := mapOf(doc["volumes"])
	_, hasVolumes := doc["volumes"]

	images := map[string]string{} // image → service
	commands := map[string]string{}
	ports := map[string]string{} // service → port of --http/--listen
	mounts := map[string]map[string]string{}
	for name, sv := range services {
		svc := mapOf(sv)
		where := fmt.Sprintf("%s service %s", rel(path), name)
		image := str(svc["image"])
		if image != "" {
			images[image] = name
		}
		if strings.Contains(strings.ToLower(image), "minio") {
			t.Errorf("%s: %s: no MinIO server (AGPL); use versitygw or SeaweedFS", where, image)
		}
		build := svc["build"]
		if image == "" && build == nil {
			t.Errorf("%s: neither image nor build", where)
		}
		lakepipe := false
		if build != nil {
			ctx, dockerfile := str(build), "Dockerfile"
			if m := mapOf(build); m != nil {
				ctx = str(m["context"])
				if d := str(m["dockerfile"]); d != "" {
					dockerfile = d
				}
			}
			ctxDir := filepath.Join(dir, ctx)
			if st, err := os.Stat(ctxDir); err != nil || !st.IsDir() {
				t.Errorf("%s: build context %s is not a directory", where, ctx)
			}
			df := filepath.Join(ctxDir, dockerfile)
			if _, err := os.Stat(df); err != nil {
				t.Errorf("%s: dockerfile: %v", where, err)
			}
			lakepipe = filepath.Clean(df) == filepath.Join(root, "deploy", "docker", "Dockerfile")
		}
		for _, dep := range dependsOn(svc["depends_on"]) {
			if services[dep] == nil {
				t.Errorf("%s: depends on unknown service %s", where, dep)
			}
		}
		mounts[name] = map[string]string{}
		for _, v := range listOf(svc["volumes"]) {
			src, dst := "", ""
			if m := mapOf(v); m != nil {
				src, dst = str(m["source"]), str(m["target"])
			} else {
				parts := strings.Split(str(v), ":")
				src = parts[0]
				if len(parts) > 1 {
					dst = parts[1]
				}
			}
			switch {
			case strings.HasPrefix(src, ".") || strings.HasPrefix(src, "/"):
				host := src
				if !filepath.IsAbs(host) {
					host = filepath.Join(dir, src)
				}
				if _, err := os.Stat(host); err != nil {
					t.Errorf("%s: bind mount %s: %v", where, src, err)
				}
				mounts[name][dst] = host
			case src != "":
				if _, ok := volumes[src]; !ok || !hasVolumes {
					t.Errorf("%s: named volume %s is not declared under volumes", where, src)
				}
			}
		}
		env := environment(svc["environment"])
		for k := range env {
			if strings.HasPrefix(k, "LAKEPIPE_") && !c.env[k] && !pendingEnv[k] {
				t.Errorf("%s: environment %s is not read by the code", where, k)
			}
		}
		if lakepipe {
			var args []string
			for _, a := range listOf(svc["command"]) {
				args = append(args, str(a))
			}
			if args == nil {
				t.Errorf("%s: give the lakepipe command as a list (worker or serve)", where)
				continue
			}
			ports[name] = checkArgs(t, c, where, args)
			commands[args[0]] = name
			if args[0] == "serve" && env["LAKEPIPE_TUNNEL_TOKEN"] == "" {
				t.Errorf("%s: the write service does not start without LAKEPIPE_TUNNEL_TOKEN", where)
			}
		}
	}
	for _, want := range []string{"worker", "serve"} {
		if commands[want] == "" {
			t.Errorf("%s: no service runs `lakepipe %s` built from deploy/docker/Dockerfile", rel(path), want)
		}
	}
	for _, prefix := range []string{"temporalio/", "temporalio/ui", "clickhouse/clickhouse-server", "redpandadata/redpanda", "prom/prometheus", "grafana/grafana"} {
		if !hasImage(images, prefix) {
			t.Errorf("%s: no service runs %s", rel(path), prefix)
		}
	}
	if !hasImage(images, "versity/versitygw") && !hasImage(images, "chrislusf/seaweedfs") {
		t.Errorf("%s: no S3 server (versitygw or SeaweedFS)", rel(path))
	}

	// Prometheus scrapes the workers at their --http port.
	promPath := filepath.Join(dir, "prometheus.yml")
	prom := readYAML(t, promPath)[0]
	scraped := map[string]string{}
	for _, sc := range listOf(prom["scrape_configs"]) {
		for _, st := range listOf(get(sc, "static_configs")) {
			for _, tg := range listOf(get(st, "targets")) {
				host, port, _ := strings.Cut(str(tg), ":")
				if host != "localhost" && services[host] == nil {
					t.Errorf("%s: target %s is no Compose service", rel(promPath), tg)
				}
				scraped[host] = port
			}
		}
		for _, dns := range listOf(get(sc, "dns_sd_configs")) {
			for _, n := range listOf(get(dns, "names")) {
				if services[str(n)] == nil {
					t.Errorf("%s: DNS name %s is no Compose service", rel(promPath), n)
				}
				scraped[str(n)] = str(get(dns, "port"))
			}
		}
	}
	if w := commands["worker"]; w != "" && scraped[w] != ports[w] {
		t.Errorf("%s: the worker service %s listens on %s, Prometheus scrapes port %q", rel(promPath), w, ports[w], scraped[w])
	}
	if p := images[imageWith(images, "prom/prometheus")]; p != "" && mounts[p]["/etc/prometheus/prometheus.yml"] == "" {
		t.Errorf("%s: the prometheus service does not mount prometheus.yml", rel(path))
	}

	// Grafana: the data source is the Prometheus service, the dashboards
	// provider reads a folder mounted from deploy/grafana.
	grafana := images[imageWith(images, "grafana/grafana")]
	prov := filepath.Join(dir, "grafana", "provisioning")
	dashboards := 0
	for _, pp := range files(t, prov, ".yaml", ".yml") {
		for _, d := range readYAML(t, pp) {
			for _, ds := range listOf(d["datasources"]) {
				u := strings.TrimPrefix(str(get(ds, "url")), "http://")
				host, _, _ := strings.Cut(u, ":")
				if services[host] == nil {
					t.Errorf("%s: data source URL %v is no Compose service", rel(pp), get(ds, "url"))
				}
			}
			for _, pr := range listOf(d["providers"]) {
				p := str(get(pr, "options", "path"))
				host := mounts[grafana][p]
				if host == "" {
					t.Errorf("%s: provider path %s is not mounted into the grafana service", rel(pp), p)
					continue
				}
				js, _ := filepath.Glob(filepath.Join(host, "*.json"))
				if len(js) == 0 {
					t.Errorf("%s: provider path %s (%s) holds no dashboard", rel(pp), p, rel(host))
				}
				dashboards++
			}
		}
	}
	if dashboards == 0 {
		t.Errorf("%s: no Grafana dashboards provider", rel(prov))
	}
	if mounts[grafana]["/etc/grafana/provisioning"] == "" {
		t.Errorf("%s: the grafana service does not mount the provisioning folder", rel(path))
	}
}

func dependsOn(v any) []string {
	var out []string
	for _, d := range listOf(v) {
		out = append(out, str(d))
	}
	for d := range mapOf(v) {
		out = append(out, d)
	}
	return out
}

// environment reads a Compose environment, map or KEY=VALUE list.
func environment(v any) map[string]string {
	env := map[string]string{}
	for k, val := range mapOf(v) {
		env[k] = str(val)
	}
	for _, e := range listOf(v) {
		k, val, _ := strings.Cut(str(e), "=")
		env[k] = val
	}
	return env
}

func imageWith(images map[string]string, prefix string) string {
	for im := range images {
		if strings.HasPrefix(im, prefix) {
			return im
		}
	}
	return ""
}

func hasImage(images map[string]string, prefix string) bool { return imageWith(images, prefix) != "" }

// ---- the Grafana dashboard

var (
	promStringRe  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	promVarRe     = regexp.MustCompile(`\$\{?([a-zA-Z_][a-zA-Z0-9_]*)(?::[a-zA-Z]+)?\}?`)
	promRangeRe   = regexp.MustCompile(`\[[^\]]*\]`)
	promMatcherRe = regexp.MustCompile(`\{([^}]*)\}`)
	promLabelRe   = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
	promGroupRe   = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)`)
	promTokenRe   = regexp.MustCompile(`[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|[a-zA-Z_:][a-zA-Z0-9_:]*(?:\s*\()?`)
	labelValuesRe = regexp.MustCompile(`^\s*label_values\(\s*(?:(.*),\s*)?([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*$`)
	legendRe      = regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)
	identRe       = regexp.MustCompile(`[a-zA-Z_][a-zA-Z0-9_]*`)
)

var promKeywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"inf": true, "nan": true, "atan2": true}

// promRefs returns the metric names, label names and variables a PromQL
// expression (with Grafana variables) refers to. It is a scanner, not a
// parser: enough for the expressions a dashboard holds.
func promRefs(expr string) (metrics, labels, vars []string) {
	for _, m := range promVarRe.FindAllStringSubmatch(expr, -1) {
		vars = append(vars, m[1])
	}
	e := promVarRe.ReplaceAllString(expr, "")
	e = promStringRe.ReplaceAllString(e, `""`)
	e = promRangeRe.ReplaceAllString(e, "")
	for _, m := range promMatcherRe.FindAllStringSubmatch(e, -1) {
		for _, l := range promLabelRe.FindAllStringSubmatch(m[1], -1) {
			labels = append(labels, l[1])
		}
	}
	e = promMatcherRe.ReplaceAllString(e, " ")
	for _, m := range promGroupRe.FindAllStringSubmatch(e, -1) {
		labels = append(labels, identRe.FindAllString(m[1], -1)...)
	}
	e = promGroupRe.ReplaceAllString(e, " ")
	for _, tok := range promTokenRe.FindAllString(e, -1) {
		if tok[0] >= '0' && tok[0] <= '9' || strings.HasSuffix(tok, "(") || promKeywords[strings.ToLower(tok)] {
			continue
		}
		metrics = append(metrics, tok)
	}
	return metrics, labels, vars
}

func TestDashboard(t *testing.T) {
	c := loadCode(t)
	path := filepath.Join(root, "deploy", "grafana", "lakepipe-dashboard.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var dash map[string]any
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("%s: %v", rel(path), err)
	}
	if str(dash["title"]) == "" || str(dash["uid"]) == "" {
		t.Errorf("%s: no title or uid", rel(path))
	}
	series := c.series()
	allowed := c.allowedLabels()
	builtinVars := map[string]bool{"__rate_interval": true, "__interval": true, "__range": true, "__range_s": true, "__interval_ms": true}

	// Variables: one Prometheus data source variable that every query uses.
	vars := map[string]bool{}
	dsVar := ""
	for _, v := range listOf(get(dash, "templating", "list")) {
		name := str(get(v, "name"))
		vars[name] = true
		if str(get(v, "type")) == "datasource" && str(get(v, "query")) == "prometheus" {
			dsVar = name
		}
	}
	if dsVar == "" {
		t.Fatalf("%s: no Prometheus data source variable", rel(path))
	}
	wantDS := "${" + dsVar + "}"
	used := map[string]bool{}
	checkExpr := func(where, expr string) {
		if strings.TrimSpace(expr) == "" {
			t.Errorf("%s: empty query", where)
			return
		}
		metrics, labels, vs := promRefs(expr)
		if len(metrics) == 0 {
			t.Errorf("%s: %q queries no metric", where, expr)
		}
		for _, m := range metrics {
			used[m] = true
			if !series[m] {
				t.Errorf("%s: %s is neither registered by the code nor one of the metrics being added", where, m)
			}
		}
		for _, l := range labels {
			if !allowed[l] {
				t.Errorf("%s: label %s is on none of the known metrics", where, l)
			}
		}
		for _, v := range vs {
			if !vars[v] && !builtinVars[v] {
				t.Errorf("%s: variable $%s is not defined", where, v)
			}
		}
	}
	for _, v := range listOf(get(dash, "templating", "list")) {
		if str(get(v, "type")) != "query" {
			continue
		}
		where := fmt.Sprintf("%s variable %s", rel(path), get(v, "name"))
		if str(get(v, "datasource", "uid")) != wantDS {
			t.Errorf("%s: data source %v, want %s", where, get(v, "datasource"), wantDS)
		}
		q := str(get(v, "query", "query"))
		if q == "" {
			q = str(get(v, "query"))
		}
		if m := labelValuesRe.FindStringSubmatch(q); m != nil {
			if !allowed[m[2]] {
				t.Errorf("%s: label %s is on none of the known metrics", where, m[2])
			}
			q = m[1]
		}
		checkExpr(where, q)
	}

	// Panels, rows included.
	ids := map[int]bool{}
	var walk func(panels []any)
	walk = func(panels []any) {
		for _, pv := range panels {
			p := mapOf(pv)
			id, _ := p["id"].(float64)
			where := fmt.Sprintf("%s panel %v %q", rel(path), p["id"], p["title"])
			if id <= 0 || ids[int(id)] {
				t.Errorf("%s: missing or duplicate id", where)
			}
			ids[int(id)] = true
			x, _ := get(p, "gridPos", "x").(float64)
			w, _ := get(p, "gridPos", "w").(float64)
			h, _ := get(p, "gridPos", "h").(float64)
			if w <= 0 || h <= 0 || x+w > 24 {
				t.Errorf("%s: gridPos %v", where, p["gridPos"])
			}
			if str(p["type"]) == "row" {
				walk(listOf(p["panels"]))
				continue
			}
			if str(get(p, "datasource", "uid")) != wantDS {
				t.Errorf("%s: data source %v, want %s", where, p["datasource"], wantDS)
			}
			targets := listOf(p["targets"])
			if len(targets) == 0 {
				t.Errorf("%s: no queries", where)
			}
			for _, tg := range targets {
				if str(get(tg, "datasource", "uid")) != wantDS {
					t.Errorf("%s query %v: data source %v, want %s", where, get(tg, "refId"), get(tg, "datasource"), wantDS)
				}
				checkExpr(where, str(get(tg, "expr")))
				for _, l := range legendRe.FindAllStringSubmatch(str(get(tg, "legendFormat")), -1) {
					if !allowed[l[1]] {
						t.Errorf("%s: legend label %s is on none of the known metrics", where, l[1])
					}
				}
			}
		}
	}
	walk(listOf(dash["panels"]))

	// Every lakepipe metric, registered or being added, has a panel.
	var missing []string
	for name, kind := range c.metrics {
		if strings.HasPrefix(name, "lakepipe_") && !usedMetric(used, name, kind) {
			missing = append(missing, name)
		}
	}
	for name, kind := range sdkMetrics {
		if !usedMetric(used, name, kind) {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("%s: no panel shows %s; add one", rel(path), m)
	}
}

func usedMetric(used map[string]bool, name, kind string) bool {
	if kind == "histogram" {
		return used[name+"_bucket"] || used[name+"_count"] || used[name+"_sum"]
	}
	return used[name] || used[name+"_count"]
}

// TestPromRefs pins the scanner the dashboard test relies on.
func TestPromRefs(t *testing.T) {
	for _, tc := range []struct {
		expr                  string
		metrics, labels, vars string
	}{
		{`sum by (pipe, status) (rate(lakepipe_pipe_files_total{pipe=~"$pipe"}[$__rate_interval]))`,
			"lakepipe_pipe_files_total", "pipe pipe status", "pipe __rate_interval"},
		{`histogram_quantile(0.95, sum(rate(a_seconds_bucket{job=~"${job}", x!="y"}[5m])) by (le))`,
			"a_seconds_bucket", "job x le", "job"},
		{`sum(increase(b_total[1h])) or vector(0)`, "b_total", "", ""},
		{`up`, "up", "", ""},
		{`max(c) > 1e3 and on(instance) d`, "c d", "instance", ""},
	} {
		m, l, v := promRefs(tc.expr)
		if got := strings.Join(m, " "); got != tc.metrics {
			t.Errorf("%s: metrics %q, want %q", tc.expr, got, tc.metrics)
		}
		if got := strings.Join(l, " "); got != tc.labels {
			t.Errorf("%s: labels %q, want %q", tc.expr, got, tc.labels)
		}
		if got := strings.Join(v, " "); got != tc.vars {
			t.Errorf("%s: vars %q, want %q", tc.expr, got, tc.vars)
		}
	}
}

// TestCodeFacts guards the source readers: if they stop finding what the
// commands really define, every other check here would pass vacuously.
func TestCodeFacts(t *testing.T) {
	c := loadCode(t)
	for _, env := range []string{"LAKEPIPE_CLICKHOUSE_ADDR", "LAKEPIPE_CLICKHOUSE_PASSWORD", "LAKEPIPE_TUNNEL_TOKEN", "LAKEPIPE_WORKER_HTTP"} {
		if !c.env[env] {
			t.Errorf("the sources no longer name %s", env)
		}
	}
	for _, f := range []string{"http", "listen", "clickhouse", "task-queue"} {
		if !c.flags[f] {
			t.Errorf("flag --%s not found in starter/", f)
		}
	}
	for _, cmd := range []string{"worker", "serve", "sql"} {
		if !c.commands[cmd] {
			t.Errorf("command %s not found in starter/main.go", cmd)
		}
	}
	for _, m := range []string{"lakepipe_pipe_files_total", "lakepipe_pipe_file_seconds", "lakepipe_pipe_kafka_lag_records"} {
		if c.metrics[m] == "" {
			t.Errorf("metric %s not found in the sources", m)
		}
	}
	if kind := c.metrics["lakepipe_pipe_file_seconds"]; kind != "histogram" {
		t.Errorf("lakepipe_pipe_file_seconds read as %q, want histogram", kind)
	}
}
