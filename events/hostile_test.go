package events_test

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/events"
	"petstore/store"
)

// A receiver that closes a kept-alive connection as the next request
// arrives on it (an idle timeout, Node's after 5 s, meeting the request)
// gets that request again at once on a new connection: the attempt
// succeeds, with no retry on the schedule.
func TestIdleConnectionClosedAsRequestArrives(t *testing.T) {
	r := newRawReceiver(t, func(q rawRequest) reply {
		if q.Conn == 1 && q.OnConn == 2 {
			return nil
		}
		return answer(204, "")
	})
	s, w := rawService(t, r)
	createCategory(t, s, "dogs")
	waitDeliveryState(t, s, w.ID, 1, store.DeliverySucceeded)
	createCategory(t, s, "cats")
	list := waitDeliveryState(t, s, w.ID, 2, store.DeliverySucceeded)
	if list[0].Attempt != 1 || list[0].Status != 204 {
		t.Errorf("the second event's delivery: %+v", list[0])
	}
	got := r.requests()
	if len(got) != 3 || got[1].ID != got[2].ID || got[1].Conn != 1 || got[2].Conn != 2 {
		t.Errorf("requests %+v; want the second event on the first connection, closed, then on a new one", got)
	}
}

// An operator's retry that meets a receiver's idle timeout is sent again
// on a new connection, and once it succeeds the event's schedule ends:
// the scheduled retry is not made.
func TestManualRetrySucceedingEndsSchedule(t *testing.T) {
	r := newRawReceiver(t, func(q rawRequest) reply {
		switch {
		case q.Before == 0:
			return answer(500, "down")
		case q.Conn == 1 && q.OnConn == 2:
			return nil // the idle timeout meets the manual retry
		}
		return answer(200, "ok")
	})
	s := domaintest.OpenStore(t)
	w, c, clk, probe := failedOnce(t, s, time.Now().UTC().Truncate(time.Second), r.URL, r.trust)
	list := waitDeliveryState(t, s, w.ID, 2, store.DeliveryPending)
	if _, err := s.RetryDelivery(ctx, w.ID, list[1].ID, clk.Now(), nil); err != nil {
		t.Fatal(err)
	}
	// The manual retry succeeded, and the scheduled one is gone.
	list = waitDeliveryState(t, s, w.ID, 2, store.DeliverySucceeded)
	if !list[0].Manual || list[1].State != store.DeliveryFailed {
		t.Fatalf("deliveries %+v; want the failed first attempt and the manual retry", list)
	}
	// Past the schedule's first wait, the engine has looked (the probe's
	// delivery), and the event was not sent again.
	clk.Advance(time.Minute)
	probe.looked(t, c.ID)
	if got := r.requests(); len(got) > 3 || got[len(got)-1].Before != len(got)-1 {
		t.Errorf("requests %+v; want the event 2 or 3 times (the first attempt, the retry, perhaps again on a new connection), nothing after", got)
	}
	if list, _, _ := s.Deliveries(ctx, w.ID, store.Page{}); len(list) != 2 {
		t.Errorf("deliveries after the schedule's time: %+v", list)
	}
}

// An operator's retry that fails leaves the schedule as it was: the
// scheduled retry is made when due.
func TestManualRetryFailingKeepsSchedule(t *testing.T) {
	r := newRawReceiver(t, func(q rawRequest) reply {
		if q.Before < 2 {
			return answer(500, "down")
		}
		return answer(200, "ok")
	})
	s := domaintest.OpenStore(t)
	w, _, clk, _ := failedOnce(t, s, time.Now().UTC().Truncate(time.Second), r.URL, r.trust)
	list := waitDeliveryState(t, s, w.ID, 2, store.DeliveryPending)
	if _, err := s.RetryDelivery(ctx, w.ID, list[1].ID, clk.Now(), nil); err != nil {
		t.Fatal(err)
	}
	list = waitDeliveryState(t, s, w.ID, 3, store.DeliveryFailed)
	if !list[0].Manual || list[0].NextAttemptAt != nil || list[1].State != store.DeliveryPending {
		t.Fatalf("deliveries %+v; want the manual retry failed, the scheduled one still pending", list)
	}
	clk.Advance(events.Schedule[0])
	domaintest.WaitFor(t, 10*time.Second, 5*time.Millisecond, func() error {
		list, _, err := s.Deliveries(ctx, w.ID, store.Page{})
		if err != nil || len(list) != 3 || list[1].State != store.DeliverySucceeded || list[1].Attempt != 2 {
			return fmt.Errorf("deliveries %+v (%v); want the scheduled retry succeeded", list, err)
		}
		return nil
	})
}

// byteBound is the most a hostile receiver may get written to the
// service's socket when the service reads a few KiB of it: what it read,
// and the kernel's buffers on loopback.
const byteBound = 8 << 20

// hostileLimit is where a hostile receiver gives up: far above byteBound.
const hostileLimit = 64 << 20

// A receiver whose answer has an endless header line is cut off near the
// header limit: the attempt fails in words, and what the service read
// (and kept in memory) stays bounded.
func TestHugeHeaderLine(t *testing.T) {
	s, w, r := endlessAnswer(t, "HTTP/1.1 200 OK\r\nX-Huge: ", 'a')
	list := waitDeliveryState(t, s, w.ID, 2, store.DeliveryPending)
	if d := list[1]; d.State != store.DeliveryFailed || !strings.Contains(d.Error, "headers exceeded") {
		t.Errorf("the attempt: %+v; want failed, headers too large", d)
	}
	r.checkBounded()
}

// A receiver whose answer's body does not end has its first 4 KiB kept,
// and the connection is closed there: the rest is not read.
func TestEndlessBody(t *testing.T) {
	s, w, r := endlessAnswer(t, "HTTP/1.1 200 OK\r\nContent-Length: 10737418240\r\n\r\n", 'b')
	list := waitDeliveryState(t, s, w.ID, 1, store.DeliverySucceeded)
	if d := list[0]; d.Status != 200 || d.Response != strings.Repeat("b", events.ResponseLimit) {
		t.Errorf("the attempt: status %d, %d bytes of answer kept; want 200 and %d", d.Status, len(d.Response), events.ResponseLimit)
	}
	r.checkBounded()
}

// endlessAnswer starts an engine and a receiver that answers every
// request with head and then fill without end (up to hostileLimit), and
// creates an event for it.
func endlessAnswer(t *testing.T, head string, fill byte) (store.Store, store.Webhook, *rawReceiver) {
	r := newRawReceiver(t, func(q rawRequest) reply {
		return func(w io.Writer) bool {
			io.WriteString(w, head)
			if err := endless(w, bytes.Repeat([]byte{fill}, 32<<10), hostileLimit); err != nil {
				t.Logf("the receiver stopped: %v", err)
			}
			return false
		}
	})
	s, w := rawService(t, r)
	createCategory(t, s, "dogs")
	return s, w, r
}

// rawService is a store with a webhook of category.created to r, and an
// engine delivering on the real clock.
func rawService(t *testing.T, r *rawReceiver) (store.Store, store.Webhook) {
	s := domaintest.OpenStore(t)
	w := hook(t, s, r.URL, store.EventCategoryCreated)
	r.trust(w.Secret)
	start(t, s, time.Now, events.Policy{AllowPrivate: true})
	return s, w
}

func createCategory(t *testing.T, s store.Store, name string) {
	t.Helper()
	if err := s.CreateCategory(ctx, &store.Category{Name: name}, nil); err != nil {
		t.Fatal(err)
	}
}

// checkBounded waits for the receiver's first connection to end, and
// checks that the service read (and kept in memory) no more than
// byteBound of it.
func (r *rawReceiver) checkBounded() {
	r.t.Helper()
	written := r.waitEnded(1)
	r.t.Logf("the receiver wrote %d bytes before the service closed the connection", written)
	if written > byteBound {
		r.t.Errorf("the receiver wrote %d bytes; want at most %d", written, byteBound)
	}
}

// A receiver that answers every request twice (a 500, then a success; a
// success, then a 500) on a connection it keeps open: each delivery is
// judged on its own answer only. Every first attempt, answered 500 first,
// fails and is retried; every retry succeeds; no delivery keeps another's
// answer.
func TestExtraAnswers(t *testing.T) {
	r := newRawReceiver(t, func(q rawRequest) reply {
		return func(w io.Writer) bool {
			first, extra := answerBytes(500, "answer to "+q.ID), answerBytes(200, "extra answer")
			if q.Before > 0 {
				first, extra = answerBytes(200, "answer to "+q.ID), answerBytes(500, "extra answer")
			}
			_, err := w.Write(append(first, extra...))
			return err == nil
		}
	})
	s := domaintest.OpenStore(t)
	clk := domaintest.NewClock(time.Now().UTC().Truncate(time.Second))
	w := hook(t, s, r.URL, store.EventCategoryCreated)
	r.trust(w.Secret)
	start(t, s, clk.Now, events.Policy{AllowPrivate: true})
	const n = 24
	for i := range n {
		if err := s.CreateCategory(ctx, &store.Category{Name: fmt.Sprint("c", i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	// check checks every delivery's answer, and counts them by state.
	logged := map[int64]bool{}
	check := func(list []store.Delivery) map[string]int {
		states := map[string]int{}
		for _, d := range list {
			states[d.State]++
			if d.State == store.DeliveryFailed && d.Status != 500 && !logged[d.ID] {
				logged[d.ID] = true
				t.Logf("delivery %d of %s (attempt %d) failed: %s", d.ID, d.EventID, d.Attempt, d.Error)
			}
			if d.Response != "" && d.Response != "answer to "+d.EventID.String() {
				t.Fatalf("delivery %d of %s kept the answer %q", d.ID, d.EventID, d.Response)
			}
			if d.Attempt == 1 && d.State == store.DeliverySucceeded {
				t.Fatalf("delivery %d of %s, answered 500, succeeded: %+v", d.ID, d.EventID, d)
			}
		}
		return states
	}
	domaintest.WaitFor(t, 20*time.Second, 10*time.Millisecond, func() error {
		list, _, err := s.Deliveries(ctx, w.ID, store.Page{Limit: 100})
		if err != nil {
			return err
		}
		if st := check(list); st[store.DeliveryFailed] != n || st[store.DeliveryPending] != n {
			return fmt.Errorf("deliveries by state %v; want %d failed and %d pending", st, n, n)
		}
		return nil
	})
	// Then each event's retries until one succeeds: the first, unless a
	// connection that an extra answer had reached was refused, which
	// fails that attempt too (its answer not taken), and the clock is
	// moved on to the next.
	domaintest.WaitFor(t, 20*time.Second, 10*time.Millisecond, func() error {
		list, _, err := s.Deliveries(ctx, w.ID, store.Page{Limit: 200})
		if err != nil {
			return err
		}
		st := check(list)
		for _, d := range list {
			if d.State == store.DeliveryPending && d.ScheduledAt.After(clk.Now()) {
				clk.Advance(d.ScheduledAt.Sub(clk.Now()))
			}
		}
		if st[store.DeliverySucceeded] != n || st[store.DeliveryPending] != 0 {
			return fmt.Errorf("deliveries by state %v; want %d succeeded, none pending", st, n)
		}
		return nil
	})
}

func answerBytes(status int, body string) []byte {
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Length: %d\r\n\r\n%s", status, "X", len(body), body)
}

// A receiver that sends an extra answer on a kept-alive connection after
// the delivery was recorded, while the connection is idle: the next
// request never takes it for its own. (The Transport closes such a
// connection when it reads the bytes; a request that takes it before then
// fails, its answer not taken.)
func TestExtraAnswerOnAnIdleConnection(t *testing.T) {
	late, sent := make(chan struct{}), make(chan struct{})
	r := newRawReceiver(t, func(q rawRequest) reply {
		if q.Conn != 1 || q.OnConn != 1 {
			return answer(200, "answer to "+q.ID)
		}
		return func(w io.Writer) bool {
			if _, err := w.Write(answerBytes(200, "answer to "+q.ID)); err != nil {
				return false
			}
			<-late
			_, err := w.Write(answerBytes(500, "extra answer"))
			close(sent)
			return err == nil
		}
	})
	s, w := rawService(t, r)
	createCategory(t, s, "dogs")
	waitDeliveryState(t, s, w.ID, 1, store.DeliverySucceeded)
	close(late)
	<-sent
	createCategory(t, s, "cats")
	domaintest.WaitFor(t, 10*time.Second, 5*time.Millisecond, func() error {
		list, _, err := s.Deliveries(ctx, w.ID, store.Page{})
		if err != nil || len(list) < 2 || list[len(list)-2].State == store.DeliveryPending {
			return fmt.Errorf("deliveries %+v (%v); want the second event's first attempt made", list, err)
		}
		d := list[len(list)-2]
		switch {
		case d.Response == "extra answer":
			t.Fatalf("the second event's delivery took the extra answer: %+v", d)
		case d.State == store.DeliverySucceeded && d.Response != "answer to "+d.EventID.String():
			t.Fatalf("the second event's delivery: %+v; want its own answer", d)
		case d.State == store.DeliveryFailed && !strings.Contains(d.Error, "before this request was sent"):
			t.Fatalf("the second event's delivery failed: %+v; want success, or the extra answer refused", d)
		}
		return nil
	})
}

// A webhook disabled (by the operator, or after 5 days of failures) is
// sent nothing more: the retries still scheduled for it are recorded as
// not sent, and their schedule ends there.
func TestDisabledWebhookIsSentNoRetry(t *testing.T) {
	s := domaintest.OpenStore(t)
	r := newReceiver(t, 500)
	w, c, clk, probe := failedOnce(t, s, time.Now().UTC().Truncate(time.Second), r.URL, r.Trust)
	if _, err := s.UpdateWebhook(ctx, w.ID, func(w *store.Webhook) error { w.Enabled = false; return nil }, nil); err != nil {
		t.Fatal(err)
	}
	// Past every wait of the schedule, the engine has looked each time.
	for i, wait := range events.Schedule {
		clk.Advance(wait)
		if err := s.CreatePet(ctx, &store.Pet{Name: fmt.Sprint("probe ", i), CategoryID: c.ID}, nil); err != nil {
			t.Fatal(err)
		}
		waitDeliveryState(t, s, probe.w.ID, i+1, store.DeliverySucceeded)
	}
	if n := len(r.Deliveries()); n != 1 {
		t.Errorf("the receiver got %d deliveries; want 1, before the webhook was disabled", n)
	}
	list, _, err := s.Deliveries(ctx, w.ID, store.Page{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].State != store.DeliveryFailed || !strings.Contains(list[0].Error, "disabled") || list[0].NextAttemptAt != nil {
		t.Fatalf("deliveries %+v; want the first attempt, then the retry not sent (the webhook disabled) and no further one", list)
	}
	// Enabled again, an operator's retry sends it.
	if _, err := s.UpdateWebhook(ctx, w.ID, func(w *store.Webhook) error { w.Enabled = true; return nil }, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RetryDelivery(ctx, w.ID, list[0].ID, clk.Now(), nil); err != nil {
		t.Fatal(err)
	}
	waitDeliveryState(t, s, w.ID, 3, store.DeliverySucceeded)
}

// A 2xx whose body the receiver breaks off (closed before its
// Content-Length, as a receiver that crashes after its status line
// leaves it) is no success: the event may not have been taken, so it is
// retried on the schedule, and the retry that answers whole succeeds.
func TestBrokenOff2xxIsRetried(t *testing.T) {
	r := newRawReceiver(t, func(q rawRequest) reply {
		if q.Before == 0 {
			return func(w io.Writer) bool {
				io.WriteString(w, "HTTP/1.1 200 OK\r\nContent-Length: 64\r\n\r\npartial")
				return false
			}
		}
		return answer(200, "ok")
	})
	s := domaintest.OpenStore(t)
	w, _, clk, _ := failedOnce(t, s, time.Now().UTC().Truncate(time.Second), r.URL, r.trust)
	list := waitDeliveryState(t, s, w.ID, 2, store.DeliveryPending)
	if d := list[1]; d.State != store.DeliveryFailed || d.Status != 200 || d.Response != "partial" || d.NextAttemptAt == nil {
		t.Fatalf("the broken-off answer's attempt: %+v; want failed, its status and what came kept, a retry scheduled", d)
	}
	clk.Advance(events.Schedule[0])
	waitDeliveryState(t, s, w.ID, 2, store.DeliverySucceeded)
}

// A webhook whose event types change no longer gets the retries of the
// events of a type it dropped (a receiver that refuses that type would
// fail for a day): they are recorded as not sent. An operator's retry of
// one is sent.
func TestRetryOfADroppedTypeIsNotSent(t *testing.T) {
	s := domaintest.OpenStore(t)
	clk := domaintest.NewClock(time.Now().UTC().Truncate(time.Second))
	r := newReceiver(t, 500)
	w := hook(t, s, r.URL, store.EventCategoryCreated, store.EventPetCreated)
	r.Trust(w.Secret)
	start(t, s, clk.Now, events.Policy{AllowPrivate: true})
	c := store.Category{Name: "dogs"}
	if err := s.CreateCategory(ctx, &c, nil); err != nil {
		t.Fatal(err)
	}
	waitDeliveryState(t, s, w.ID, 2, store.DeliveryPending)
	if _, err := s.UpdateWebhook(ctx, w.ID, func(w *store.Webhook) error { w.Events = []string{store.EventPetCreated}; return nil }, nil); err != nil {
		t.Fatal(err)
	}
	// A pet's event, still taken, is sent; its success ends the webhook's
	// failure record.
	if err := s.CreatePet(ctx, &store.Pet{Name: "Rex", CategoryID: c.ID}, nil); err != nil {
		t.Fatal(err)
	}
	waitDeliveryState(t, s, w.ID, 3, store.DeliverySucceeded)
	clk.Advance(events.Schedule[0])
	// The retry is judged, and says nothing of the receiver.
	var retry store.Delivery
	domaintest.WaitFor(t, 10*time.Second, 5*time.Millisecond, func() error {
		list, _, err := s.Deliveries(ctx, w.ID, store.Page{})
		for _, d := range list {
			if d.Attempt == 2 && d.State == store.DeliveryFailed {
				retry = d
				return nil
			}
		}
		return fmt.Errorf("deliveries %+v (%v): the retry not judged yet", list, err)
	})
	if !strings.Contains(retry.Error, "no longer takes") || retry.NextAttemptAt != nil {
		t.Errorf("the retry of the dropped type: %+v; want not sent, no further retry", retry)
	}
	if got, err := s.Webhook(ctx, w.ID); err != nil || got.FailingSince != nil {
		t.Errorf("the webhook after a retry not sent: failing since %v (%v); want not failing, its last attempt a success", got.FailingSince, err)
	}
	if _, err := s.RetryDelivery(ctx, w.ID, retry.ID, clk.Now(), nil); err != nil {
		t.Fatal(err)
	}
	waitDeliveryState(t, s, w.ID, 4, store.DeliverySucceeded)
	var types []string
	for _, d := range r.Deliveries() {
		types = append(types, d.Event.Type)
	}
	if want := []string{store.EventCategoryCreated, store.EventPetCreated, store.EventCategoryCreated}; !slices.Equal(types, want) {
		t.Errorf("the receiver got %v; want %v (the first attempt, the pet, the operator's retry)", types, want)
	}
}
