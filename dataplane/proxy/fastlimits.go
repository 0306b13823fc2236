package proxy

import (
	"bufio"
	"errors"
	"net"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Deadlines of the fast path (limits.go): the client's request body, the client reading the
// answer, and the backend's answer head. Each is refreshed lazily, like fastConn.setReadDeadline:
// only when the one in force is more than 1/64 of the limit older than wanted, so that most
// requests at high rates touch no timer.

var (
	// errBodyIdle: the client sent no byte of its announced body for requestBodyIdleTimeout.
	errBodyIdle = errors.New("request body idle timeout")
	// errBackendTimeout: the backend sent no answer head within backendResponseTimeout.
	errBackendTimeout = errors.New("backend response timeout")
)

// refresh returns the deadline to set for now+d, or the zero time when *dl is close enough.
func refresh(dl *time.Time, now time.Time, d time.Duration) (time.Time, bool) {
	want := now.Add(d)
	if !dl.IsZero() && !dl.After(want) && want.Sub(*dl) < d/64 {
		return time.Time{}, false
	}
	*dl = want
	return want, true
}

// copyBody relays n bytes of request body from the client to w. Before each read that has to
// wait for the client, the read deadline moves to now+idle, so a client that stalls mid-body is
// cut after idle (errBodyIdle) instead of holding its connection and an upstream one.
func (fc *fastConn) copyBody(w *bufio.Writer, r *bufio.Reader, n int64, idle time.Duration) error {
	for n > 0 {
		if r.Buffered() == 0 {
			fc.setReadDeadline(fc.conn, time.Now(), idle)
			if _, err := r.Peek(1); err != nil {
				if errors.Is(err, os.ErrDeadlineExceeded) {
					fc.hits.bodyIdle.Inc()
					return errBodyIdle
				}
				return err
			}
		}
		b, _ := r.Peek(int(min(n, int64(r.Buffered()))))
		if _, err := w.Write(b); err != nil {
			return err
		}
		_, _ = r.Discard(len(b))
		n -= int64(len(b))
	}
	return nil
}

// idleWriter is the client connection as the fast path writes to it: every write may wait for
// the client at most d, so a client that reads nothing is disconnected and the upstream
// connection its answer holds is released.
type idleWriter struct {
	c   net.Conn
	d   time.Duration
	dl  time.Time
	hit prometheus.Counter
}

func (w *idleWriter) Write(p []byte) (int, error) {
	if w.d > 0 {
		if dl, ok := refresh(&w.dl, time.Now(), w.d); ok {
			_ = w.c.SetWriteDeadline(dl)
		}
	}
	n, err := w.c.Write(p)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		w.hit.Inc()
	}
	return n, err
}

// awaitAnswer bounds the wait for the backend's answer head by d.
func (uc *upConn) awaitAnswer(d time.Duration) {
	if dl, ok := refresh(&uc.deadline, time.Now(), d); ok {
		_ = uc.c.SetReadDeadline(dl)
	}
}

// bodyUnbounded lifts the head's deadline before a body that needs more reads: once the head is
// in, a backend may stream its body as slowly as it likes.
func (uc *upConn) bodyUnbounded() {
	if !uc.deadline.IsZero() {
		uc.deadline = time.Time{}
		_ = uc.c.SetReadDeadline(time.Time{})
	}
}

// answerErr maps a failure to read the backend's answer head to errBackendTimeout when the
// deadline of awaitAnswer ended it.
func answerErr(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return errBackendTimeout
	}
	return err
}
