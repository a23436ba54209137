package worker

import (
	"context"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"

	"github.com/lakepipe/lakepipe/internal/metrics"
)

// loadInterceptor counts the activities a worker runs at each moment
// (lakepipe_worker_activities_running): its load, next to the SDK's slot
// gauges.
type loadInterceptor struct {
	interceptor.WorkerInterceptorBase
	m *metrics.Worker
}

func (l *loadInterceptor) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &loadActivity{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, m: l.m}
}

type loadActivity struct {
	interceptor.ActivityInboundInterceptorBase
	m *metrics.Worker
}

func (a *loadActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	defer a.m.ActivityStarted(activity.GetInfo(ctx).ActivityType.Name)()
	return a.Next.ExecuteActivity(ctx, in)
}
