package loading

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/fileread"
	"github.com/lakepipe/lakepipe/internal/jobs"
)

// CopyJobHint is a volume pipe's COPY_JOB_HINT: a JSON object of settings
// for the copy jobs of its turns. ClickZetta Lakehouse passes engine
// settings this way; lakepipe takes the keys that mean something to its
// copy jobs and refuses the others by name, so that no hint is accepted
// and ignored:
//
//	parallelism    large files (over 4 MiB) of a turn loaded at once, 1-32
//	               (default: the worker's, 4)
//	max_file_size  files larger than this are not read: recorded FAILED with
//	               the reason, retried when they change (bytes, or a number
//	               with KB, MB, GB or TB)
type CopyJobHint struct {
	Parallelism int
	MaxFileSize int64
}

// copyJobHintKeys are the keys ParseCopyJobHint takes.
var copyJobHintKeys = []string{"max_file_size", "parallelism"}

// MaxHintParallelism bounds parallelism: each large file holds an insert
// block (up to 16 MiB) and a reader.
const MaxHintParallelism = 32

// ParseCopyJobHint reads a COPY_JOB_HINT value ("" is no hint).
func ParseCopyJobHint(v string) (CopyJobHint, error) {
	var h CopyJobHint
	if strings.TrimSpace(v) == "" {
		return h, nil
	}
	var m map[string]any
	d := json.NewDecoder(strings.NewReader(v))
	d.UseNumber()
	if err := d.Decode(&m); err != nil || m == nil {
		return h, fmt.Errorf(`COPY_JOB_HINT = %q: expected a JSON object such as '{"parallelism": 8, "max_file_size": "10GB"}'`, clip(v))
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		raw := strings.TrimSpace(fmt.Sprint(m[k]))
		switch strings.ToLower(k) {
		case "parallelism":
			n, err := strconv.Atoi(raw)
			if err != nil || n < 1 || n > MaxHintParallelism {
				return h, fmt.Errorf("COPY_JOB_HINT parallelism = %q: expected a whole number from 1 to %d", clip(raw), MaxHintParallelism)
			}
			h.Parallelism = n
		case "max_file_size":
			n, err := parseSize(raw)
			if err != nil {
				return h, fmt.Errorf("COPY_JOB_HINT max_file_size = %q: %v", clip(raw), err)
			}
			h.MaxFileSize = n
		default:
			return h, fmt.Errorf("COPY_JOB_HINT key %q means nothing to lakepipe's copy jobs (known: %s)", clip(k), strings.Join(copyJobHintKeys, ", "))
		}
	}
	return h, nil
}

// parseSize reads "1048576", "512KB", "10 GB" (powers of 1,024).
func parseSize(s string) (int64, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	mult := int64(1)
	for _, unit := range []struct {
		suffix string
		mult   int64
	}{{"TB", 1 << 40}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(u, unit.suffix) {
			u, mult = strings.TrimSpace(strings.TrimSuffix(u, unit.suffix)), unit.mult
			break
		}
	}
	n, err := strconv.ParseInt(u, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("expected a positive size in bytes, or with KB, MB, GB or TB")
	}
	return n * mult, nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// CopyJobHint is the pipe's hint as its run was opened with (checked when
// the pipe was created or altered).
func (r *PipeRun) CopyJobHint() CopyJobHint {
	h, _ := ParseCopyJobHint(r.Spec.Properties["copy_job_hint"])
	return h
}

// RejectTooLarge records a file over the hint's max_file_size FAILED,
// without reading it; an upload of another version is tried again.
func (r *PipeRun) RejectTooLarge(ctx context.Context, f jobs.FileRef, limit int64) (jobs.FileResult, error) {
	msg := fmt.Sprintf("the file is %d bytes, more than COPY_JOB_HINT max_file_size (%d bytes): it was not read (raise max_file_size with ALTER PIPE %s SET COPY_JOB_HINT, or split the file)", f.Size, limit, r.Name)
	fl := fileread.FileLoad{Path: f.Path, Size: f.Size, ETag: f.ETag, Status: jobs.FileFailed, FirstError: msg}
	if err := r.e.RecordLoads(ctx, r.target.Display, r.Name, core.LoadID(r.commitID(f)), []fileread.FileLoad{fl}); err != nil {
		return jobs.FileResult{Path: f.Path}, err
	}
	return jobs.FileResult{Path: f.Path, Status: jobs.FileFailed, FirstError: msg}, nil
}
