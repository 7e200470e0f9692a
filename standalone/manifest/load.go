package manifest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/layout"
)

// Bundle is what one or more cluster files declare, every object admitted
// (defaulted and validated) as the API server would admit it.
type Bundle struct {
	// Cluster is the one CacheCluster of the files.
	Cluster *v1alpha1.CacheCluster
	// Layers are the CacheLayers by name; every layerRef of Cluster names
	// one of them.
	Layers map[string]*v1alpha1.CacheLayer
	// Fabrics are the SwitchFabrics by name.
	Fabrics map[string]*v1alpha1.SwitchFabric
}

// Load reads multi-document YAML files ("---" separated; a document may
// also be a List, such as `kubectl get -o yaml` writes), admits every
// object with v and checks that they form one cluster: exactly one
// CacheCluster, every layerRef naming a CacheLayer of the files (else the
// error wraps layout.ErrLayerNotFound), one namespace for all. Empty
// documents are skipped. Errors start with the file and, when it holds
// several documents, the document ("cluster.yaml: document 2: "); the
// rest of an admission error is the API server's message.
func Load(ctx context.Context, v *Validator, paths ...string) (*Bundle, error) {
	if len(paths) == 0 {
		return nil, errors.New("cannot load a cluster: no file given")
	}
	c := newCollector(v)
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("cannot read cluster file: %w", err)
		}
		if err := c.add(ctx, p, data); err != nil {
			return nil, err
		}
	}
	return c.bundle(strings.Join(paths, ", "))
}

// Parse is Load for the contents of one file; source names it in errors.
func Parse(ctx context.Context, v *Validator, source string, data []byte) (*Bundle, error) {
	c := newCollector(v)
	if err := c.add(ctx, source, data); err != nil {
		return nil, err
	}
	return c.bundle(source)
}

// placed is an admitted object and where it was declared.
type placed[T any] struct {
	obj   T
	where string
}

// collector gathers the objects of one or more files.
type collector struct {
	v        *Validator
	clusters []placed[*v1alpha1.CacheCluster]
	layers   map[string]placed[*v1alpha1.CacheLayer]
	fabrics  map[string]placed[*v1alpha1.SwitchFabric]
}

func newCollector(v *Validator) *collector {
	return &collector{
		v:       v,
		layers:  map[string]placed[*v1alpha1.CacheLayer]{},
		fabrics: map[string]placed[*v1alpha1.SwitchFabric]{},
	}
}

// document is one "---" separated part of a file.
type document struct {
	line int // where it starts in the file, from 1
	data []byte
	json []byte // nil when it does not parse
	err  error
}

// add admits every object of one file.
func (c *collector) add(ctx context.Context, source string, data []byte) error {
	if c.v == nil {
		return errors.New("cannot admit objects without a Validator")
	}
	var docs []document
	for _, d := range splitDocuments(data) {
		d.json, d.err = yaml.YAMLToJSONStrict(d.data)
		if d.err == nil && isEmptyDocument(d.json) {
			continue
		}
		docs = append(docs, d)
	}
	for i, d := range docs {
		where := source
		if len(docs) > 1 {
			where = fmt.Sprintf("%s: document %d", source, i+1)
		}
		if d.err != nil {
			return fmt.Errorf("%s: cannot parse the YAML that starts on line %d: %w", where, d.line, d.err)
		}
		if err := c.addDocument(ctx, where, d.json); err != nil {
			return err
		}
	}
	return nil
}

// addDocument admits the object of a document, or each item of a List.
func (c *collector) addDocument(ctx context.Context, where string, data []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return fmt.Errorf("%s: cannot read an object: the document is not a YAML mapping", where)
	}
	h := peek(data)
	if !strings.HasSuffix(h.Kind, "List") || fields["items"] == nil {
		return c.addObject(ctx, where, data)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(fields["items"], &items); err != nil {
		return fmt.Errorf("%s: cannot read the items of %s: %w", where, h.Kind, err)
	}
	for i, item := range items {
		if err := c.addObject(ctx, fmt.Sprintf("%s: items[%d]", where, i), item); err != nil {
			return err
		}
	}
	return nil
}

// addObject admits one object and files it by kind.
func (c *collector) addObject(ctx context.Context, where string, data []byte) error {
	h := peek(data)
	u, err := c.v.admitJSON(ctx, data)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if h.Metadata.Name == "" {
		return fmt.Errorf("%s: cannot run %s with a generated name: standalone mode needs metadata.name", where, u.GetKind())
	}
	switch u.GroupVersionKind() {
	case v1alpha1.GroupVersion.WithKind("CacheCluster"):
		cc := &v1alpha1.CacheCluster{}
		if err := fromUnstructured(where, u, cc); err != nil {
			return err
		}
		c.clusters = append(c.clusters, placed[*v1alpha1.CacheCluster]{cc, where})
	case v1alpha1.GroupVersion.WithKind("CacheLayer"):
		l := &v1alpha1.CacheLayer{}
		if err := fromUnstructured(where, u, l); err != nil {
			return err
		}
		return addNamed(c.layers, "CacheLayer", where, l.Name, l)
	case v1alpha1.GroupVersion.WithKind("SwitchFabric"):
		f := &v1alpha1.SwitchFabric{}
		if err := fromUnstructured(where, u, f); err != nil {
			return err
		}
		return addNamed(c.fabrics, "SwitchFabric", where, f.Name, f)
	default:
		return fmt.Errorf("%s: cannot use kind %s of apiVersion %s in a cluster file: %w", where, u.GetKind(), u.GetAPIVersion(), ErrUnknownKind)
	}
	return nil
}

// addNamed files obj under name unless another object has that name.
func addNamed[T any](m map[string]placed[T], kind, where, name string, obj T) error {
	if prev, ok := m[name]; ok {
		return fmt.Errorf("%s: cannot declare %s %q twice: %s declares it too", where, kind, name, prev.where)
	}
	m[name] = placed[T]{obj, where}
	return nil
}

// fromUnstructured converts an admitted object to its Go type.
func fromUnstructured(where string, u *unstructured.Unstructured, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		return fmt.Errorf("%s: cannot convert %s %q: %w", where, u.GetKind(), u.GetName(), err)
	}
	return nil
}

// bundle checks the collected objects; sources names the files for
// errors about the whole.
func (c *collector) bundle(sources string) (*Bundle, error) {
	switch len(c.clusters) {
	case 0:
		return nil, fmt.Errorf("cannot load a cluster: %s: no CacheCluster declared", sources)
	case 1:
	default:
		a, b := c.clusters[0], c.clusters[1]
		return nil, fmt.Errorf("%s: cannot run two CacheClusters: %q here and %q in %s; standalone mode runs exactly one", b.where, b.obj.Name, a.obj.Name, a.where)
	}
	cc := c.clusters[0]
	b := &Bundle{
		Cluster: cc.obj,
		Layers:  make(map[string]*v1alpha1.CacheLayer, len(c.layers)),
		Fabrics: make(map[string]*v1alpha1.SwitchFabric, len(c.fabrics)),
	}
	ns := cc.obj.Namespace
	for name, l := range c.layers {
		if l.obj.Namespace != ns {
			return nil, namespaceError(l.where, "CacheLayer", name, l.obj.Namespace, cc.obj.Name, ns)
		}
		b.Layers[name] = l.obj
	}
	for name, f := range c.fabrics {
		if f.obj.Namespace != ns {
			return nil, namespaceError(f.where, "SwitchFabric", name, f.obj.Namespace, cc.obj.Name, ns)
		}
		b.Fabrics[name] = f.obj
	}
	for _, ref := range cc.obj.Spec.LayerRefs {
		if _, ok := b.Layers[ref]; !ok {
			return nil, fmt.Errorf("%s: cannot resolve layerRef %q of CacheCluster %q: no CacheLayer of that name in %s: %w",
				cc.where, ref, cc.obj.Name, sources, layout.ErrLayerNotFound)
		}
	}
	return b, nil
}

// namespaceError says that an object is not in its cluster's namespace.
func namespaceError(where, kind, name, namespace, cluster, clusterNamespace string) error {
	return fmt.Errorf("%s: cannot use %s %q of namespace %q with CacheCluster %q of namespace %q: a cluster's objects share its namespace",
		where, kind, name, namespace, cluster, clusterNamespace)
}

// splitDocuments splits a YAML stream at its "---" lines, as kubectl does
// (k8s.io/apimachinery's YAMLReader: "---" alone or before a comment), and
// remembers where each document starts.
func splitDocuments(data []byte) []document {
	var docs []document
	cur := document{line: 1}
	for line := 1; len(data) > 0; line++ {
		l := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			l = data[:i+1]
		}
		data = data[len(l):]
		if isSeparator(l) {
			docs = append(docs, cur)
			cur = document{line: line + 1}
			continue
		}
		cur.data = append(cur.data, l...)
	}
	return append(docs, cur)
}

// isSeparator says whether a line separates two YAML documents.
func isSeparator(line []byte) bool {
	rest, ok := bytes.CutPrefix(line, []byte("---"))
	if !ok {
		return false
	}
	rest = bytes.TrimSpace(rest)
	return len(rest) == 0 || rest[0] == '#'
}

// isEmptyDocument says whether a document's JSON is empty: nothing but
// comments, or an explicit null.
func isEmptyDocument(j []byte) bool {
	j = bytes.TrimSpace(j)
	return len(j) == 0 || string(j) == "null"
}

// Layout lays the bundle's cluster out (layout.Resolve) from its layers
// and fabrics, as `distcache up` runs it.
func (b *Bundle) Layout() (*layout.Cluster, error) {
	return layout.Resolve(b.Cluster.Name, &b.Cluster.Spec,
		func(name string) (*v1alpha1.CacheLayerSpec, bool) {
			l, ok := b.Layers[name]
			if !ok {
				return nil, false
			}
			return &l.Spec, true
		},
		func(name string) (layout.Fabric, bool) {
			f, ok := b.Fabrics[name]
			if !ok {
				return layout.Fabric{}, false
			}
			return layout.Fabric{Spec: &f.Spec}, true
		})
}
