package supervisor

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor/principal"
)

// TestExecutionsBelongToTheirPrincipal: an execution is its submitter's;
// to another principal GetExecution and CancelExecution say NOT_FOUND
// exactly as for an id that does not exist, and ListExecutions leaves it
// out. (Its sandbox cannot start here: it ends FAILED, which is all the
// test needs.)
func TestExecutionsBelongToTheirPrincipal(t *testing.T) {
	s := preparingServer(t)
	t.Cleanup(func() { _ = s.runner.Shutdown(time.Second) })
	alice := principal.NewContext(context.Background(), principal.Token("alice"))
	bob := principal.NewContext(context.Background(), principal.Token("bob"))
	resp, err := s.ExecuteAsync(alice, &sandboxv1.ExecuteRequest{Source: &sandboxv1.ExecuteRequest_Code{Code: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	id := resp.GetExecutionId()
	ctx, cancel := context.WithTimeout(alice, 10*time.Second)
	defer cancel()
	got, err := s.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: id, Wait: true})
	if err != nil || got.GetResult() == nil {
		t.Fatalf("owner's GetExecution = %v, %v", got, err)
	}
	// An id this run could have made, but did not.
	never := s.IDs().New()
	_, unknown := s.GetExecution(bob, &sandboxv1.GetExecutionRequest{ExecutionId: never})
	_, err = s.GetExecution(bob, &sandboxv1.GetExecutionRequest{ExecutionId: id})
	if status.Code(err) != codes.NotFound || status.Convert(err).Message() != strings.ReplaceAll(status.Convert(unknown).Message(), never, id) {
		t.Errorf("another principal's GetExecution = %v, want NOT_FOUND (unknown id: %v)", err, unknown)
	}
	if _, err := s.CancelExecution(bob, &sandboxv1.CancelExecutionRequest{ExecutionId: id}); status.Code(err) != codes.NotFound {
		t.Errorf("another principal's CancelExecution = %v, want NOT_FOUND", err)
	}
	if l, err := s.ListExecutions(bob, &sandboxv1.ListExecutionsRequest{}); err != nil || len(l.GetExecutions()) != 0 {
		t.Errorf("another principal's ListExecutions = %v, %v; want nothing", l.GetExecutions(), err)
	}
	if l, err := s.ListExecutions(alice, &sandboxv1.ListExecutionsRequest{}); err != nil || len(l.GetExecutions()) != 1 || l.GetExecutions()[0].GetExecutionId() != id {
		t.Errorf("owner's ListExecutions = %v, %v", l.GetExecutions(), err)
	}
	// A call without a principal in its context is the local principal's.
	if _, err := s.GetExecution(context.Background(), &sandboxv1.GetExecutionRequest{ExecutionId: id}); status.Code(err) != codes.NotFound {
		t.Errorf("local principal's GetExecution of alice's = %v, want NOT_FOUND", err)
	}
}
