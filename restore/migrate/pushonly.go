package migrate

import (
	"context"
	"fmt"
)

// PushOnly runs the bundle step alone, with the run's state: it creates,
// signs and pushes the bundle (or keeps the one an earlier run pushed while
// the registry still has it) and records it, so that a later Run with the
// same options skips to the restore. It needs neither cluster 0 nor the
// target: node 0 can get its state into the registry before a reboot even
// when cluster 0 does not answer. Like the preflight, it refuses while other
// sessions use node 0's database, unless Live.
func PushOnly(ctx context.Context, o Options) (*Result, error) {
	m, err := newMigration(o)
	if err != nil {
		return nil, err
	}
	o = m.o
	st, err := LoadState(o.StateDir, o.Ref.String(), o.Target, o.Namespace)
	if err != nil {
		return nil, &StepError{Step: StepBundle, Number: StepNumber(StepBundle), Err: err}
	}
	m.state = st
	res := &Result{Reference: o.Ref.String(), Namespace: o.Namespace, RestoreMode: o.RestoreMode(), StateDir: st.dir}
	fail := func(err error) (*Result, error) {
		return res, &StepError{Step: StepBundle, Number: StepNumber(StepBundle), Err: err}
	}
	if !st.Done(StepBundle) && o.SourceDB != "" {
		// The preflight's check of node 0's database, without its checks of
		// cluster 0.
		n, who, err := o.DB.OtherSessions(ctx, o.SourceDB)
		if err != nil {
			return fail(fmt.Errorf("node 0's database: %w", err))
		}
		if n > 0 && !o.Live {
			return fail(hinted(fmt.Errorf("%d other session(s) are connected to node 0's database (%s): assisted-service is still writing", n, who),
				"Stop assisted-service on node 0 first, or pass --live."))
		}
	}
	sr, err := m.runStep(ctx, bundleStep{})
	if err != nil {
		return fail(err)
	}
	res.Digest, res.Steps = st.Digest, []StepResult{sr}
	m.addKeys(res)
	return res, nil
}
