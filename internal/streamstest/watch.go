package streamstest

import (
	"context"
	"slices"
	"sync"
	"time"
)

// GroupEvent is a change in a group's status seen by a GroupWatcher.
type GroupEvent struct {
	At     time.Time
	Status GroupStatus
	Err    error
}

// GroupWatcher polls a group's status and keeps every change, so that a
// test can tell what the group went through during an expansion.
type GroupWatcher struct {
	mu     sync.Mutex
	events []GroupEvent
	cancel context.CancelFunc
	done   chan struct{}
}

// WatchGroup polls status every interval until Stop.
func WatchGroup(interval time.Duration, status func(context.Context) (GroupStatus, error)) *GroupWatcher {
	ctx, cancel := context.WithCancel(context.Background())
	w := &GroupWatcher{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		last := ""
		for {
			s, err := status(ctx)
			if ctx.Err() != nil {
				return
			}
			key := s.String()
			if err != nil {
				key = "error: " + err.Error()
			}
			if key != last {
				last = key
				w.mu.Lock()
				w.events = append(w.events, GroupEvent{At: time.Now(), Status: s, Err: err})
				w.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(interval):
			}
		}
	}()
	return w
}

// Events returns the changes seen so far, oldest first.
func (w *GroupWatcher) Events() []GroupEvent {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.events)
}

// Stop ends the polling and returns every change seen.
func (w *GroupWatcher) Stop() []GroupEvent {
	w.cancel()
	<-w.done
	return w.Events()
}
