//go:build integration

package integration

import (
	"errors"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/kafkaload"
)

// TestKafkaPipeRunKept: a Kafka pipe's activities open it once and keep it
// between turns (runcache): the same run while the pipe, its table and
// its dead-letter table are unchanged, a new one after any of them
// changes, never a run for another incarnation of the pipe. WithWarn
// gives a batch a run of its own, the kept one untouched.
func TestKafkaPipeRunKept(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	s.run(`CREATE TABLE kr_logs (log_time TIMESTAMP, level STRING, message STRING)`)
	topic := "kept_" + s.ID
	kafkaTopic(t, topic, 1)
	s.run(kafkaPipeSQL("kr_pipe", "kr_logs", topic, "kr_"+s.ID, 0, ""))
	s.dropAtEnd("PIPE", "kr_pipe")
	params, err := s.Eng.PipeParams(s.Ctx, "kr_pipe")
	must(t, err)

	start := time.Now()
	first, err := s.Eng.OpenKafkaPipe(s.Ctx, params)
	must(t, err)
	built := time.Since(start)
	start = time.Now()
	again, err := s.Eng.OpenKafkaPipe(s.Ctx, params)
	must(t, err)
	if again != first {
		t.Fatal("an unchanged pipe was built again")
	}
	t.Logf("opened: %v building (twice: to learn what it reads, then to keep), %v kept", built, time.Since(start))
	if own := again.WithWarn(func(string) {}); own == again || own.Warn == nil || again.Warn != nil {
		t.Fatal("WithWarn did not give a run of its own")
	}

	// The pipe altered: a new run, with its dead-letter table.
	s.run(`ALTER PIPE kr_pipe SET DEAD_LETTER_TABLE = 'kr_dead'`)
	altered, err := s.Eng.OpenKafkaPipe(s.Ctx, params)
	must(t, err)
	if altered == first || altered.Spec.Properties["dead_letter_table"] != "kr_dead" {
		t.Fatalf("after ALTER PIPE: kept %v, dead_letter_table %q", altered == first, altered.Spec.Properties["dead_letter_table"])
	}
	// It reads one more object now: the next opening learns its version,
	// the one after keeps the run.
	learnt, err := s.Eng.OpenKafkaPipe(s.Ctx, params)
	must(t, err)
	kept, err := s.Eng.OpenKafkaPipe(s.Ctx, params)
	must(t, err)
	if kept != learnt {
		t.Fatal("the altered pipe was built again")
	}
	// Its tables changed: a new run each time.
	s.run(`DROP TABLE kr_dead`)
	if _, err := s.Eng.OpenKafkaPipe(s.Ctx, params); err == nil {
		t.Fatal("a pipe whose dead-letter table was dropped opened")
	}
	s.run(`CREATE TABLE kr_dead ` + kafkaload.DeadLetterColumns)
	redead, err := s.Eng.OpenKafkaPipe(s.Ctx, params)
	must(t, err)
	if redead == kept {
		t.Fatal("the run was kept after its dead-letter table was dropped and created again")
	}
	s.run(`ALTER TABLE kr_logs ADD COLUMN note STRING`)
	retable, err := s.Eng.OpenKafkaPipe(s.Ctx, params)
	must(t, err)
	if retable == redead {
		t.Fatal("the run was kept after its table changed")
	}

	// Another incarnation's workflow is told the pipe is gone.
	old := params
	old.Generation--
	if _, err := s.Eng.OpenKafkaPipe(s.Ctx, old); !errors.Is(err, core.ErrPipeGone) {
		t.Fatalf("the workflow of an earlier pipe of the same name: %v, want ErrPipeGone", err)
	}
}
