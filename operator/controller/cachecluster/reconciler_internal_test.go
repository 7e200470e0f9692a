package cachecluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
)

func TestRetryConflict(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "statefulsets"}, "shop-rack-0", errors.New("the object has been modified"))
	other := errors.New("cannot reach the API server")
	for _, tc := range []struct {
		name    string
		res     ctrl.Result
		err     error
		want    ctrl.Result
		wantErr error
	}{
		{"no error", ctrl.Result{RequeueAfter: time.Minute}, nil, ctrl.Result{RequeueAfter: time.Minute}, nil},
		{"other error", ctrl.Result{}, other, ctrl.Result{}, other},
		{"conflict", ctrl.Result{}, conflict, ctrl.Result{RequeueAfter: conflictRetry}, nil},
		{"wrapped conflict", ctrl.Result{}, fmt.Errorf("cannot apply: %w", conflict), ctrl.Result{RequeueAfter: conflictRetry}, nil},
		{"joined with a conflict of the status patch", ctrl.Result{}, errors.Join(fmt.Errorf("cannot update: %w", conflict), conflict), ctrl.Result{RequeueAfter: conflictRetry}, nil},
		{"joined with another error", ctrl.Result{}, errors.Join(conflict, other), ctrl.Result{}, other},
		{"conflict keeps an earlier requeue", ctrl.Result{RequeueAfter: 50 * time.Millisecond}, conflict, ctrl.Result{RequeueAfter: 50 * time.Millisecond}, nil},
		{"conflict shortens a later requeue", ctrl.Result{RequeueAfter: time.Minute}, conflict, ctrl.Result{RequeueAfter: conflictRetry}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := retryConflict(context.Background(), tc.res, tc.err)
			if res != tc.want || !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Errorf("retryConflict = %+v, %v; want %+v, %v", res, err, tc.want, tc.wantErr)
			}
		})
	}
}
