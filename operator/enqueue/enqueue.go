// Package enqueue maps a watched object's change to the objects whose
// reconcilers must look again.
package enqueue

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// AllInNamespace enqueues every object of newList's kind in the namespace
// of the object that changed: for kinds that any object of that namespace
// may refer to through another (a CacheCluster to a SwitchFabric through a
// CacheLayer).
func AllInNamespace(c client.Reader, newList func() client.ObjectList) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		list := newList()
		if err := c.List(ctx, list, client.InNamespace(o.GetNamespace())); err != nil {
			log.FromContext(ctx).Error(err, "cannot list the objects to reconcile again", "namespace", o.GetNamespace())
			return nil
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(items))
		for _, it := range items {
			if obj, ok := it.(client.Object); ok {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
			}
		}
		return out
	})
}
