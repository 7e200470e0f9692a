package rbac_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/internal/testing/kubetest"
	"github.com/distcache/distcache/internal/testing/poll"
)

// window is when a named scenario ran.
type window struct {
	name       string
	start, end time.Time
}

// TestOperatorRBAC runs the operator as its ServiceAccount through the
// scenarios, then checks the audit log against the granted permissions.
func TestOperatorRBAC(t *testing.T) {
	ctx := t.Context()
	g, err := generatedRBAC()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := env.ServiceAccountConfig(ctx, operatorNamespace, operatorAccount)
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "rbac-"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	if err := grant(ctx, env.Client, operatorAccount, g, ns.Name); err != nil {
		t.Fatal(err)
	}
	s := &scenarios{ns: ns.Name, owner: t, statusPort: freePort(t)}

	var windows []window
	for _, sc := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"start", func(t *testing.T) { s.start(t, cfg) }},
		{"create", s.create},
		{"failover", s.failover},
		{"restore", s.restore},
		{"scale", s.scale},
		{"layer removed", s.layerRemoved},
		{"drift", s.drift},
		{"external", s.external},
		{"redisOperator", s.redisOperator},
		{"network policies", s.networkPolicies},
		{"gateway daemonset", s.gatewayDaemonSet},
		{"gateway off", s.gatewayOff},
		{"redis resources", s.redisResources},
		{"layers and fabrics", s.layersAndFabrics},
		{"rollout", s.rollout},
		{"domains", s.domains},
		{"backups", s.backups},
		{"delete", s.delete},
	} {
		w := window{name: sc.name, start: time.Now()}
		if !t.Run(sc.name, sc.run) {
			t.FailNow()
		}
		w.end = time.Now()
		windows = append(windows, w)
	}
	checkAudit(t, windows, permissions(g.operator.Rules), permissions(g.lease.Rules), permissions(g.secrets.Rules))
}

// TestWithoutImpliedPermission runs the operator without one of the
// permissions the API server checks while admitting another request
// (checkedByAdmission), and finds that request refused: the "create"
// scenario cannot go on.
func TestWithoutImpliedPermission(t *testing.T) {
	tests := []struct {
		name    string
		missing permission
		refused string // the resource whose creation is refused
	}{
		// OwnerReferencesPermissionEnforcement refuses owner references
		// with blockOwnerDeletion on the first object it creates.
		{"finalizers", permission{"distcache.io", "cacheclusters/finalizers", "update"}, ""},
		// RBAC lets a Role grant only what its creator holds: the
		// data-plane Role's get on the map ConfigMap.
		{"configmaps get", permission{"", "configmaps", "get"}, "roles"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			account := fmt.Sprintf("operator-without-%d", i)
			g, err := generatedRBAC()
			if err != nil {
				t.Fatal(err)
			}
			g.operator.Rules = without(g.operator.Rules, tc.missing)
			cfg, err := env.ServiceAccountConfig(ctx, operatorNamespace, account)
			if err != nil {
				t.Fatal(err)
			}
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "rbac-"}}
			if err := env.Client.Create(ctx, ns); err != nil {
				t.Fatal(err)
			}
			if err := grant(ctx, env.Client, account, g, ns.Name); err != nil {
				t.Fatal(err)
			}
			s := &scenarios{ns: ns.Name, owner: t, statusPort: freePort(t)}
			s.start(t, cfg)
			s.newCluster(t, "shop", v1alpha1.StorageSpec{Racks: 1, ShardsPerRack: 1}, 1)
			user := kubetest.ServiceAccountUser(operatorNamespace, account)
			eventually(t, "an object of the cluster refused", func() (bool, error) {
				events, err := kubetest.ReadAudit(auditLog)
				for _, e := range events {
					if e.User.Username == user && e.Verb == "create" && e.ObjectRef != nil && e.ObjectRef.Namespace == ns.Name &&
						(tc.refused == "" || e.ObjectRef.Resource == tc.refused) && e.ResponseStatus != nil && e.ResponseStatus.Code == 403 {
						return true, nil
					}
				}
				return false, err
			})
		})
	}
}

// checkedByAdmission are permissions the API server checks while admitting
// another request rather than as a request of their own, so the audit log
// cannot show their use; the named test shows what breaks without them.
var checkedByAdmission = map[permission]string{
	// OwnerReferencesPermissionEnforcement: owner references with
	// blockOwnerDeletion on the objects the operator creates.
	{"distcache.io", "cacheclusters/finalizers", "update"}: "TestWithoutImpliedPermission/finalizers",
	// RBAC's escalation check: the data-plane Role grants get on the map
	// ConfigMap, which the operator must hold (its cache needs no get).
	{"", "configmaps", "get"}: "TestWithoutImpliedPermission/configmaps_get",
}

// usedByChance are permissions whose use depends on timing, so a scenario
// cannot be sure to need them; the check that nothing is refused still
// covers them whenever they are used.
var usedByChance = map[permission]string{
	{"events.k8s.io", "events", "patch"}: "client-go counts an event alike to one it sent for the same object version into that event's series, with a patch",
}

// checkAudit reads what the operator's ServiceAccount asked for: nothing may
// have been refused, and every granted permission must have been used.
func checkAudit(t *testing.T, windows []window, granted ...[]permission) {
	events, err := kubetest.ReadAudit(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	user := kubetest.ServiceAccountUser(operatorNamespace, operatorAccount)
	usedIn := map[permission]string{} // the first scenario that used it
	for _, e := range events {
		if e.User.Username != user || e.ObjectRef == nil || e.ResponseStatus == nil {
			continue
		}
		p := auditPermission(e)
		sc := "after the scenarios"
		for _, w := range windows {
			if !e.RequestReceived.Before(w.start) && e.RequestReceived.Before(w.end) {
				sc = w.name
				break
			}
		}
		switch {
		case e.ResponseStatus.Code == 403:
			t.Errorf("refused in scenario %q: %s (%s/%s): add it to the operator's +kubebuilder:rbac markers", sc, p, e.ObjectRef.Namespace, e.ObjectRef.Name)
		case usedIn[p] == "":
			usedIn[p] = sc
			if p.verb == "watch" {
				// client-go lists before it watches where the API server
				// does not stream a watch's initial state (WatchList).
				usedIn[permission{p.group, p.resource, "list"}] = sc
			}
		}
	}
	var unused []string
	for _, ps := range granted {
		for _, p := range ps {
			if test, ok := checkedByAdmission[p]; ok {
				t.Logf("%-50s checked by admission, not requested: %s", p, test)
				continue
			}
			if why, ok := usedByChance[p]; ok {
				t.Logf("%-50s not required to be used: %s", p, why)
				continue
			}
			if sc, ok := usedIn[p]; ok {
				t.Logf("%-50s first used in %q", p, sc)
			} else {
				unused = append(unused, p.String())
			}
		}
	}
	if len(unused) > 0 {
		slices.Sort(unused)
		t.Errorf("granted but used by no scenario (remove from the +kubebuilder:rbac markers, or add the scenario that needs it):\n  %s", strings.Join(unused, "\n  "))
	}
}

// eventually waits until cond holds (see poll.Eventually).
func eventually(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	poll.Eventually(t, what, cond)
}
