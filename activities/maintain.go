package activities

import "context"

// Maintain expires old load and refresh history, trims change logs,
// empties the trash and ends idle streaming-write sessions
// (Engine.Maintain). It is idempotent and cheap when there is nothing to
// do; MaintenanceWorkflow runs it every hour from a Temporal Schedule.
func (a *Activities) Maintain(ctx context.Context) error {
	defer keepAlive(ctx)()
	return bounded(a.api().maintain(ctx))
}
