package workflows

import (
	"errors"
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/lakepipe/lakepipe/internal/jobs"
)

// pipeControl is what the pipe workflow's update handlers read and change
// of its state.
type pipeControl struct {
	paused, running, dropped func() bool
	pause, resume, refresh   func()
	set                      func(jobs.PipeSettings) string // applies; says how
	status                   func() jobs.Status
	kick                     func() // wakes the workflow's loop
}

// setPipeUpdates registers the pipe's updates. Their validators refuse
// what cannot apply, with the reason; the handlers change state (as the
// signals of the same names do), wake the loop and reply with the state
// the pipe took.
func setPipeUpdates(ctx workflow.Context, name string, c pipeControl) error {
	notDropped := func() error {
		if c.dropped() {
			return errors.New("it is being dropped")
		}
		return nil
	}
	reply := func(detail string) (jobs.ControlReply, error) {
		c.kick()
		return jobs.ControlReply{Status: c.status(), Detail: detail}, nil
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, jobs.UpdatePause, func(workflow.Context) (jobs.ControlReply, error) {
		detail := "no new turn starts"
		if c.paused() {
			detail = "it was paused already"
		} else if c.running() {
			detail = "the turn in progress finishes; no new turn starts"
		}
		c.pause()
		return reply(detail)
	}, workflow.UpdateHandlerOptions{Validator: notDropped}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, jobs.UpdateResume, func(workflow.Context) (jobs.ControlReply, error) {
		detail := "a turn starts now"
		if !c.paused() {
			detail = "it was not paused; a turn starts now"
		}
		c.resume()
		return reply(detail)
	}, workflow.UpdateHandlerOptions{Validator: notDropped}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, jobs.UpdateSet, func(_ workflow.Context, s jobs.PipeSettings) (jobs.ControlReply, error) {
		return reply(c.set(s))
	}, workflow.UpdateHandlerOptions{Validator: func(s jobs.PipeSettings) error {
		if err := notDropped(); err != nil {
			return err
		}
		if s.PollSeconds < 0 || s.MaxFilesPerTurn < 0 {
			return fmt.Errorf("settings must be positive: %+v", s)
		}
		return nil
	}}); err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(ctx, jobs.UpdateRefresh, func(workflow.Context) (jobs.ControlReply, error) {
		detail := "a turn starts now"
		if c.running() {
			detail = "a turn is running; another starts when it ends"
		}
		c.refresh()
		return reply(detail)
	}, workflow.UpdateHandlerOptions{Validator: func() error {
		if err := notDropped(); err != nil {
			return err
		}
		if c.paused() {
			return fmt.Errorf("it is paused, so no turn can run: ALTER PIPE %s SET PIPE_EXECUTION_PAUSED = FALSE resumes it", name)
		}
		return nil
	}})
}

// dynamicControl is what the dynamic-table workflow's update handlers
// read and change of its state.
type dynamicControl struct {
	suspended, refreshing, dropped func() bool
	suspend, resume                func()
	refresh                        func(workflow.Context) (jobs.RefreshChainResult, error)
	kick                           func()
}

// setDynamicTableUpdates registers a dynamic table's SUSPEND, RESUME and
// REFRESH updates. A refresh replies when it has run, with every refresh
// of its chain.
func setDynamicTableUpdates(ctx workflow.Context, c dynamicControl) error {
	notDropped := func() error {
		if c.dropped() {
			return errors.New("it is being dropped")
		}
		return nil
	}
	status := func() jobs.Status {
		if c.suspended() {
			return jobs.StatusSuspended
		}
		return jobs.StatusRunning
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, jobs.UpdateSuspend, func(workflow.Context) (jobs.ControlReply, error) {
		detail := "no scheduled refresh runs"
		if c.suspended() {
			detail = "it was suspended already"
		} else if c.refreshing() {
			detail = "the refresh in progress finishes; no scheduled refresh runs after it"
		}
		c.suspend()
		c.kick()
		return jobs.ControlReply{Status: status(), Detail: detail}, nil
	}, workflow.UpdateHandlerOptions{Validator: notDropped}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, jobs.UpdateResume, func(workflow.Context) (jobs.ControlReply, error) {
		detail := "the next scheduled refresh is one interval from now"
		if !c.suspended() {
			detail = "it was not suspended"
		}
		c.resume()
		c.kick()
		return jobs.ControlReply{Status: status(), Detail: detail}, nil
	}, workflow.UpdateHandlerOptions{Validator: notDropped}); err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(ctx, jobs.UpdateRefresh, c.refresh, workflow.UpdateHandlerOptions{Validator: notDropped})
}
