package switchfabric

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/layout"
	"github.com/distcache/distcache/operator/clusterresolve"
	"github.com/distcache/distcache/operator/controller/cachecluster"
	"github.com/distcache/distcache/operator/secretaccess"
	pipelines "github.com/distcache/distcache/stratum_pipelines"
)

// statusRefresh is how often a programmed fabric's status is refreshed
// without news (port counts; a lost session notification). It also bounds
// how late a rotated TLS Secret is taken up.
const statusRefresh = 15 * time.Second

// binding is what a fabric's fleet programs: the cluster it serves, its
// switches and how they are programmed. Its JSON form (key) tells whether
// a running fleet still programs what the objects ask for.
type binding struct {
	Cluster     string
	MapRef      string // the partition map's ConfigMap
	Pipeline    string // spec.pipeline
	Program     string
	Switches    []layout.SwitchMember
	Programming layout.SwitchProgramming
	ElectionID  uint64
	TLSVersion  string // the TLS Secret's resourceVersion; "" for plaintext

	// ClientLeaves are the fabric's client leaves, programmed with
	// LeafProgram from the cluster's map; they are members of no layer.
	ClientLeaves []layout.ClientLeaf
	LeafProgram  string

	tls *tls.Config
	// build is the compiled program read from spec.pipelineSource: not
	// part of the key, as a new build of the same P4Info reaches the
	// running sessions (program).
	build *loaded
}

func (b *binding) key() string {
	k, _ := json.Marshal(b) // plain fields: cannot fail
	return string(k)
}

// bind finds the one CacheCluster whose switch-backed layers use the
// fabric, the member names of its switches there, and the fabric's client
// leaves.
func (r *Reconciler) bind(ctx context.Context, s *state) (ctrl.Result, error) {
	var list v1alpha1.CacheClusterList
	if err := r.List(ctx, &list, client.InNamespace(s.f.Namespace)); err != nil {
		return ctrl.Result{}, fmt.Errorf("cannot list CacheClusters: %w", err)
	}
	var users []string
	for i := range list.Items {
		cc := &list.Items[i]
		if !cc.DeletionTimestamp.IsZero() {
			continue
		}
		c, err := clusterresolve.Resolve(ctx, r.Client, cc)
		if _, ok := clusterresolve.Reason(err); ok {
			continue // the cluster's own status says why
		}
		if err != nil {
			return ctrl.Result{}, err
		}
		var sws []layout.SwitchMember
		for _, sm := range c.SwitchMembers() {
			if sm.Fabric == s.f.Name {
				sws = append(sws, sm)
			}
		}
		if len(sws) == 0 {
			continue
		}
		var leaves []layout.ClientLeaf
		for _, cl := range c.ClientLeaves() {
			if cl.Fabric == s.f.Name {
				leaves = append(leaves, cl)
			}
		}
		users = append(users, cc.Name)
		s.binding = &binding{Cluster: cc.Name, MapRef: cachecluster.MapConfigMapName(cc.Name), Switches: sws, ClientLeaves: leaves,
			Programming: c.SwitchProgramming(), ElectionID: ElectionIDOf(r.ElectionID, r.Replica)}
	}
	sort.Strings(users)
	switch {
	case len(users) == 0:
		return s.block(v1alpha1.ReasonNotInUse, "no CacheCluster's switch-backed layer uses this fabric: its switches are not programmed")
	case len(users) > 1:
		return s.block(v1alpha1.ReasonFabricShared, fmt.Sprintf("switch-backed layers of CacheClusters %s use this fabric; a switch caches for one cluster: give each its own fabric", strings.Join(users, ", ")))
	}
	return ctrl.Result{}, nil
}

// checkDriver refuses what this operator cannot program: the onos driver
// (package fabric/onos programs tables and reads device state through
// ONOS, but the cache switch controller needs registers, packet-outs and
// digests, which ONOS's REST API does not have), and a pipeline it does
// not have.
func (r *Reconciler) checkDriver(_ context.Context, s *state) (ctrl.Result, error) {
	if s.f.Spec.Driver != v1alpha1.DriverStratum {
		return s.block(v1alpha1.ReasonDriverUnavailable, fmt.Sprintf("the %s driver cannot run the cache switch controller: ONOS's REST API has no register writes, "+
			"packet-outs or digests, which the serving lease and hot-key insertion need (docs/switches.md, The ONOS driver); no switch is programmed", s.f.Spec.Driver))
	}
	program, ok := pipelines.Pipelines[s.f.Spec.Pipeline]
	if !ok {
		return s.block(v1alpha1.ReasonPipelineMismatch, fmt.Sprintf("pipeline %q is not one this operator has (%s)", s.f.Spec.Pipeline, strings.Join(pipelines.PipelineNames(), ", ")))
	}
	s.binding.Pipeline, s.binding.Program = s.f.Spec.Pipeline, program
	s.binding.LeafProgram = pipelines.ClientLeafPipelines[s.f.Spec.Pipeline]
	return ctrl.Result{}, nil
}

// tlsRetry is how soon a fabric whose TLS Secret is missing or unusable
// is looked at again (Secrets are not watched).
const tlsRetry = 30 * time.Second

// loadTLS reads the fabric's kubernetes.io/tls Secret: the operator's
// client certificate (tls.crt, tls.key) and the switches' CA (ca.crt).
func (r *Reconciler) loadTLS(ctx context.Context, s *state) (ctrl.Result, error) {
	ref := s.f.Spec.TLSSecretRef
	if ref == nil {
		return ctrl.Result{}, nil
	}
	sec := &corev1.Secret{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: s.f.Namespace, Name: ref.Name}, sec)
	if apierrors.IsNotFound(err) {
		res, _ := s.block(v1alpha1.ReasonTLSSecretInvalid, fmt.Sprintf("TLS Secret %s does not exist", ref.Name))
		res.RequeueAfter = tlsRetry
		return res, nil
	}
	if msg, ok := secretaccess.Forbidden(err, s.f.Namespace, "read the TLS Secret "+ref.Name); ok {
		res, _ := s.block(v1alpha1.ReasonSecretsForbidden, msg)
		res.RequeueAfter = tlsRetry
		return res, nil
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("cannot get Secret %s: %w", ref.Name, err)
	}
	cfg, err := tlsConfig(sec)
	if err != nil {
		res, _ := s.block(v1alpha1.ReasonTLSSecretInvalid, err.Error())
		res.RequeueAfter = tlsRetry
		return res, nil
	}
	s.binding.tls, s.binding.TLSVersion = cfg, sec.ResourceVersion
	return ctrl.Result{}, nil
}

// tlsConfig is the client configuration of a kubernetes.io/tls Secret
// with ca.crt.
func tlsConfig(sec *corev1.Secret) (*tls.Config, error) {
	cert, err := tls.X509KeyPair(sec.Data[corev1.TLSCertKey], sec.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, fmt.Errorf("cannot use TLS Secret %s: tls.crt and tls.key: %w", sec.Name, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(sec.Data["ca.crt"]) {
		return nil, fmt.Errorf("cannot use TLS Secret %s: ca.crt holds no PEM certificate", sec.Name)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}
