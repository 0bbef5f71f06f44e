package session

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestSubscriberBounds: past MaxSubscribersPerSandbox subscriptions to
// one sandbox, or MaxSubscribersPerPrincipal to one principal's
// sandboxes (its clients' counted with its own), Subscribe is a
// *QuotaError naming the bound; a subscription whose iterator ends, or
// whose context ends, gives its place back; another principal is not
// held back.
func TestSubscriberBounds(t *testing.T) {
	// One principal holds the sandboxes the bound per principal needs.
	h := newHarness(t, Config{MaxPerPrincipal: 16})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client, err := alice.WithClient(strings.Repeat("k", 32))
	if err != nil {
		t.Fatal(err)
	}
	perPrincipal := MaxSubscribersPerPrincipal / MaxSubscribersPerSandbox
	var sandboxes []*Sandbox
	for i := range perPrincipal + 1 {
		owner := alice
		if i == 0 {
			owner = client // a client's subscriptions count for its principal
		}
		sandboxes = append(sandboxes, h.create(t, CreateParams{Owner: owner}))
	}
	var q *QuotaError
	first := sandboxes[0]
	for range MaxSubscribersPerSandbox {
		if _, err := h.m.Subscribe(ctx, client, first.ID(), 0); err != nil {
			t.Fatal(err)
		}
	}
	_, err = h.m.Subscribe(ctx, client, first.ID(), 0)
	if !errors.As(err, &q) || q.Max != MaxSubscribersPerSandbox || !strings.Contains(err.Error(), "subscribers to this sandbox's events") {
		t.Fatalf("subscriber %d of one sandbox: %v", MaxSubscribersPerSandbox+1, err)
	}
	// An iterator that ends gives its place back at once.
	seq, err := h.m.Subscribe(ctx, alice, sandboxes[1].ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for range MaxSubscribersPerSandbox - 1 {
		if _, err := h.m.Subscribe(ctx, alice, sandboxes[1].ID(), 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		break // the ready event
	}
	if _, err := h.m.Subscribe(ctx, alice, sandboxes[1].ID(), 0); err != nil {
		t.Fatalf("after a subscription ended: %v", err)
	}
	for _, s := range sandboxes[2:perPrincipal] {
		for range MaxSubscribersPerSandbox {
			if _, err := h.m.Subscribe(ctx, alice, s.ID(), 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	last := sandboxes[perPrincipal]
	_, err = h.m.Subscribe(ctx, alice, last.ID(), 0)
	if !errors.As(err, &q) || q.Max != MaxSubscribersPerPrincipal || !strings.Contains(err.Error(), "subscribers to this principal's sandbox events") {
		t.Fatalf("subscriber %d of one principal: %v", MaxSubscribersPerPrincipal+1, err)
	}
	// Another principal subscribes to its own.
	bobs := h.create(t, CreateParams{Owner: bob})
	if _, err := h.m.Subscribe(ctx, bob, bobs.ID(), 0); err != nil {
		t.Fatalf("another principal: %v", err)
	}
	// A context that ends gives the places back (context.AfterFunc: soon
	// after, not at once).
	cancel()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		_, err := h.m.Subscribe(context.Background(), alice, last.ID(), 0)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after the subscriptions' context ended: %v", err)
		}
	}
}
