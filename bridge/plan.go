package bridge

import (
	"context"
	"sync"

	"github.com/claude-rpc/claude-rpc/claudecli"
)

// plannedTransport owns the transport, which exists once the CLI's
// version said how to run it (Options.Plan, resolved on a goroutine of its
// own after ready). Until then the bridge answers every command that does
// not run the CLI; those that do wait for it (tr).
type plannedTransport struct {
	mu    sync.Mutex
	cfgMu sync.Mutex    // serializes passConfig; taken before mu
	done  chan struct{} // closed once t is set
	t     claudecli.Transport
	ask   bool   // --ask as planned; as asked for until then
	name  string // the transport asked for, until t is set
}

// tr is the transport, once planned: it waits. Only what runs the CLI
// calls it (a run, a compaction), never the dispatcher.
func (s *server) tr() claudecli.Transport {
	<-s.plan.done
	return s.plan.t
}

// trCtx is tr, or ctx's cause when ctx ends first.
func (s *server) trCtx(ctx context.Context) (claudecli.Transport, error) {
	select {
	case <-s.plan.done:
		return s.plan.t, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// trNow is the transport if it is planned already; it never waits.
func (s *server) trNow() (claudecli.Transport, bool) {
	s.plan.mu.Lock()
	defer s.plan.mu.Unlock()
	return s.plan.t, s.plan.t != nil
}

// capsNow is what the transport can do, without waiting: until the plan
// is made, what the one asked for would (the plan differs only for a CLI
// older than the supported range), with no funcs (claudecli.CapsOf).
func (s *server) capsNow() claudecli.Caps {
	if t, ok := s.trNow(); ok {
		return t.Caps()
	}
	return claudecli.CapsOf(s.transportName())
}

// transportName is the transport's name, for get_state: the one asked for
// until the plan is made.
func (s *server) transportName() string {
	s.plan.mu.Lock()
	defer s.plan.mu.Unlock()
	if s.plan.t != nil {
		return s.plan.t.Name()
	}
	return s.plan.name
}

// askOn is whether tools that need permission are asked of the host.
func (s *server) askOn() bool {
	s.plan.mu.Lock()
	defer s.plan.mu.Unlock()
	return s.plan.ask
}

// setTransport makes t the transport, with ask, and hands it the config
// the settings say now before anything waiting for the plan may use it: a
// turn started first would run on the options' bare config, without the
// host's side of the control protocol (the CLI then refuses every tool
// that needs permission without asking).
func (s *server) setTransport(t claudecli.Transport, ask bool) {
	if on := t.Caps().OnOwnTurn; on != nil {
		on(s.runs.ownTurn) // the CLI's turns of its own become runs
	}
	s.plan.mu.Lock()
	s.plan.ask = ask
	s.plan.t = t
	s.plan.mu.Unlock()
	s.passConfig()
	close(s.plan.done)
}

// passConfig hands the transport, once there is one, the config the
// settings say now. Under cfgMu: of two calls racing, the one that passes
// its config last read the settings last, so a setting changed while the
// plan was made reaches the transport either way.
func (s *server) passConfig() {
	s.plan.cfgMu.Lock()
	defer s.plan.cfgMu.Unlock()
	if t, ok := s.trNow(); ok {
		cfg, _ := s.cliConfig()
		t.SetConfig(cfg)
	}
}

// makePlan asks Options.Plan how to run the CLI, with the version the
// cache remembers, and makes the transport it says. A transport the plan
// names that cannot be made (it never names one New refuses) leaves the
// one asked for.
func (s *server) makePlan(version string) {
	plan := s.opts.Plan(version)
	t, err := claudecli.New(plan.Transport, s.opts.CLI, s.opts.MaxLine)
	if err != nil {
		s.log.Error("the CLI's plan names a transport that cannot run; keeping the one asked for", "transport", plan.Transport, "err", err)
		t, _ = claudecli.New(s.opts.Transport, s.opts.CLI, s.opts.MaxLine)
		plan.Ask = s.opts.Ask
	}
	s.setTransport(t, plan.Ask)
}
