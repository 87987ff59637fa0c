package bridge

import (
	"time"

	"github.com/claude-rpc/claude-rpc/claudecli"
	"github.com/claude-rpc/claude-rpc/claudecli/infocache"
	"github.com/claude-rpc/claude-rpc/transform"
)

// The info cache (Options.InfoCache) holds what the CLI said about itself
// last time, for this CLI binary and its settings: the bridge answers from
// it until the CLI has spoken, and writes what the CLI says each time it
// says it (a prewarmed process's initialize answer, a query, a run's
// limits). The Store serializes its writes; what the bridge knows stays in
// infoKeeper and state, under their locks.

// loadCache reads the cache's entry for this CLI and its settings, if
// any, into infoKeeper (answers until the CLI speaks) and state (the models'
// limits). It returns the CLI's version the entry remembers, "" if none.
// Called once, before ready.
func (s *server) loadCache(env []string) string {
	if s.cache == nil {
		return ""
	}
	cli, err := claudecli.Find(s.opts.CLI.Path)
	if err != nil {
		return ""
	}
	key, ok := infocache.Key(cli, s.cwd, s.configDir, env)
	if !ok {
		return ""
	}
	s.cacheKey = key
	e, ok := s.cache.Load(key)
	if !ok || len(e.Info.Models) == 0 {
		s.log.Debug("no cached CLI info", "dir", s.cache.Dir(), "key", key)
		return ""
	}
	s.log.Debug("cached CLI info", "dir", s.cache.Dir(), "key", key, "version", e.Info.Version, "saved", e.Saved)
	s.info.setCached(&e.Info, e.Saved)
	limits := make(map[string]transform.Limits, len(e.Limits))
	for id, l := range e.Limits {
		limits[id] = transform.Limits{ContextWindow: l.ContextWindow, MaxTokens: l.MaxTokens}
	}
	s.st.addLimits(limits)
	return e.Info.Version
}

// saveCache writes what the CLI said (info; nil: the newest the bridge
// has) and the models' limits known now. It does file I/O: never on the
// dispatcher.
func (s *server) saveCache(info *claudecli.Info) {
	if s.cache == nil || s.cacheKey == "" {
		return
	}
	if info == nil {
		got, ok := s.knownInfo()
		if !ok {
			return
		}
		info = &got
	}
	e := infocache.Entry{Info: *info, Limits: map[string]infocache.Limits{}, Saved: time.Now().UTC()}
	for id, l := range s.st.knownLimits() {
		e.Limits[id] = infocache.Limits{ContextWindow: l.ContextWindow, MaxTokens: l.MaxTokens}
	}
	if err := s.cache.Save(s.cacheKey, e); err != nil {
		s.log.Debug("writing the CLI info cache", "err", err)
	}
}

// saveLimitsLater writes the cache on a goroutine of the bridge's, after a
// run told limits not known before.
func (s *server) saveLimitsLater() {
	// Refused at shutdown: the limits are saved with the next run's.
	s.goes.start(func() {
		s.saveCache(nil)
	})
}

// infoFreshFor is how long a cache entry is taken as it is on the pipe and
// pty transports, where refreshing it costs a CLI process of its own: one
// started with the bridge competes with the first prompt's CLI for the
// CPU (docs/performance.md, 'Figures behind the code'). What the entry's
// key covers (the CLI binary, its settings and command files, the
// environment) invalidates it at once whatever its age.
const infoFreshFor = time.Hour

// refreshInfo asks the CLI again what it offers when the answers so far
// came from the cache: a prewarmed stream process tells it by itself (and
// prewarm's commandsChanged writes it); otherwise one query process, once
// the entry is older than infoFreshFor. Called on the start goroutine,
// after the plan and the prewarm.
func (s *server) refreshInfo() {
	cached, savedAt := s.info.cachedAt()
	if !cached {
		return
	}
	if s.capsNow().LiveInfo != nil && s.opts.Prewarm {
		return
	}
	if time.Since(savedAt) < infoFreshFor {
		return
	}
	if _, err := s.queryInfo(s.ctx); err != nil {
		s.log.Debug("refreshing the CLI's models and commands", "err", err)
	}
}
