package extensions

import (
	"context"
	"sync"
)

// Dialogs are the extensions' dialogs being asked ([UI] with Dialog), by
// the host's id: the host withdraws one ([UI].Withdrawn) when its timeout
// or signal ends it. The zero value is ready; its methods may be called
// from any goroutine and never block.
type Dialogs struct {
	mu   sync.Mutex
	byID map[int64]context.CancelFunc
}

// Add records dialog id as asked; cancel ends its asking.
func (d *Dialogs) Add(id int64, cancel context.CancelFunc) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.byID == nil {
		d.byID = map[int64]context.CancelFunc{}
	}
	d.byID[id] = cancel
}

// Cancel ends dialog id's asking (withdrawn from the host, or answered),
// if it is asked.
func (d *Dialogs) Cancel(id int64) {
	d.mu.Lock()
	cancel := d.byID[id]
	delete(d.byID, id)
	d.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}
