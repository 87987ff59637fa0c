package bridge

import (
	"context"
	"sync"

	"github.com/claude-rpc/claude-rpc/claudecli"
)

// plannedTransport owns the transport, which exists once the CLI's
// version said how to run it (Options.Plan, resolved on a goroutine of its
// own after ready). Until then the bridge answers every command that does
// not run the CLI; those that do wait for it (tr). Its mutex is taken
// only by its methods below; the one call it makes under it is the
// transport's SetConfig (pass), which takes the transport's own lock and
// calls back into nothing.
type plannedTransport struct {
	mu   sync.Mutex
	done chan struct{} // closed once t is set
	t    claudecli.Transport
	ask  bool // --ask as planned; as asked for until then
	// hooks: the CLI is to report every hook it runs (Plan.HookEvents).
	hooks bool
	name  string // the transport asked for, until t is set
	// passed is the settings' revision of the last config passed to t.
	passed uint64
}

// now is the transport if it is planned already; it never waits.
func (p *plannedTransport) now() (claudecli.Transport, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.t, p.t != nil
}

// transportName is the transport's name: the one asked for until the plan
// is made.
func (p *plannedTransport) transportName() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.t != nil {
		return p.t.Name()
	}
	return p.name
}

// askOn is whether tools that need permission are asked of the host.
func (p *plannedTransport) askOn() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ask
}

// hookEvents is whether the CLI is to report every hook it runs.
func (p *plannedTransport) hookEvents() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hooks
}

// set makes t the transport, with ask and hooks. It does not end the wait
// (ready).
func (p *plannedTransport) set(t claudecli.Transport, ask, hooks bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ask, p.hooks = ask, hooks
	p.t = t
}

// ready ends the wait for the transport: set has made it.
func (p *plannedTransport) ready() { close(p.done) }

// pass hands the transport cfg, made from the settings of revision rev,
// unless a config made from later settings was handed already: of two
// calls racing, the newer settings win whichever comes last.
func (p *plannedTransport) pass(cfg claudecli.Config, rev uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.t == nil || rev < p.passed {
		return
	}
	p.passed = rev
	p.t.SetConfig(cfg)
}

// transport is the transport, once planned: it waits. Only what runs the
// CLI calls it (a run, a compaction), never the dispatcher.
func (s *server) transport() claudecli.Transport {
	<-s.plan.done
	return s.plan.t // set before done was closed, never again
}

// transportCtx is transport, or ctx's cause when ctx ends first.
func (s *server) transportCtx(ctx context.Context) (claudecli.Transport, error) {
	select {
	case <-s.plan.done:
		return s.plan.t, nil // set before done was closed, never again
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// transportNow is the transport if it is planned already; it never waits.
func (s *server) transportNow() (claudecli.Transport, bool) { return s.plan.now() }

// capsNow is what the transport can do, without waiting: until the plan
// is made, what the one asked for would (the plan differs only for a CLI
// older than the supported range), with no funcs (claudecli.CapsOf).
func (s *server) capsNow() claudecli.Caps {
	if t, ok := s.transportNow(); ok {
		return t.Caps()
	}
	return claudecli.CapsOf(s.transportName())
}

// transportName is the transport's name, for get_state: the one asked for
// until the plan is made.
func (s *server) transportName() string { return s.plan.transportName() }

// askOn is whether tools that need permission are asked of the host.
func (s *server) askOn() bool { return s.plan.askOn() }

// setTransport makes t the transport, with ask, and hands it the config
// the settings say now before anything waiting for the plan may use it: a
// turn started first would run on the options' bare config, without the
// host's side of the control protocol (the CLI then refuses every tool
// that needs permission without asking).
func (s *server) setTransport(t claudecli.Transport, ask, hooks bool) {
	if on := t.Caps().OnOwnTurn; on != nil {
		on(s.runs.ownTurn) // the CLI's turns of its own become runs
	}
	s.plan.set(t, ask, hooks)
	s.passConfig()
	s.plan.ready()
}

// passConfig hands the transport, once there is one, the config the
// settings say now. A setting changed while the plan is made reaches the
// transport either way: a change made before setTransport's passConfig
// read the settings is in its config; one made after finds the transport
// and passes its own. Of two configs passed racing, the one made from
// the later settings stays (plannedTransport.pass).
func (s *server) passConfig() {
	if _, ok := s.transportNow(); !ok {
		return // setTransport passes it
	}
	s.plan.pass(s.cliConfig())
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
	s.setTransport(t, plan.Ask, plan.HookEvents)
}
