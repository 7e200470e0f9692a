// Command chaosmesh runs Chaos Mesh's own admission checks over the
// experiments in chaos/: every chaos-mesh.org document of the files given is
// decoded strictly into the Chaos Mesh API type of its kind, defaulted and
// validated by that type's webhook code, as the chaos-controller-manager's
// webhook does on a cluster. Documents of other groups are skipped.
//
// It is a module of its own because the Chaos Mesh API module pins other
// Kubernetes versions than the repository's root module. The same module pins
// the API that `make chaos-crds` generates the CRDs from.
//
// Usage, from this directory: go run . FILE...
// It prints one line per rejected document and exits 1 if there was one.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/yaml"
)

func main() {
	logf.SetLogger(logr.Discard()) // the webhooks log every call
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: go run . FILE...")
		os.Exit(2)
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		fmt.Fprintf(os.Stderr, "cannot register the Chaos Mesh types: %v\n", err)
		os.Exit(2)
	}
	rejected, checked := 0, 0
	for _, file := range os.Args[1:] {
		problems, n, err := checkFile(scheme, file)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		checked += n
		for _, p := range problems {
			fmt.Println(p)
		}
		rejected += len(problems)
	}
	fmt.Printf("%d chaos-mesh.org documents checked, %d rejected\n", checked, rejected)
	if rejected > 0 {
		os.Exit(1)
	}
}

// checkFile checks every document of file; it returns one line per
// rejected document and how many chaos-mesh.org documents it checked.
func checkFile(scheme *runtime.Scheme, file string) (problems []string, checked int, err error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, 0, fmt.Errorf("cannot read %s: %w", file, err)
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return problems, checked, nil
		}
		if err != nil {
			return nil, 0, fmt.Errorf("cannot split %s into documents: %w", file, err)
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			problems = append(problems, fmt.Sprintf("%s: document %d: cannot read its kind: %v", file, i, err))
			continue
		}
		gvk := tm.GroupVersionKind()
		if gvk.Group != v1alpha1.SchemeGroupVersion.Group {
			continue
		}
		checked++
		if err := check(scheme, tm, doc); err != nil {
			problems = append(problems, fmt.Sprintf("%s: document %d (%s): %v", file, i, tm.Kind, err))
		}
	}
}

// check decodes doc into its Chaos Mesh type, defaults and validates it.
func check(scheme *runtime.Scheme, tm metav1.TypeMeta, doc []byte) error {
	obj, err := scheme.New(tm.GroupVersionKind())
	if err != nil {
		return fmt.Errorf("cannot find the type of %s: %w", tm.GroupVersionKind(), err)
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return fmt.Errorf("cannot decode: %w", err)
	}
	ctx := context.Background()
	if d, ok := obj.(webhook.CustomDefaulter); ok {
		if err := d.Default(ctx, obj); err != nil {
			return fmt.Errorf("cannot default: %w", err)
		}
	}
	v, ok := obj.(webhook.CustomValidator)
	if !ok {
		return fmt.Errorf("%s has no validating webhook", tm.Kind)
	}
	if _, err := v.ValidateCreate(ctx, obj); err != nil {
		return fmt.Errorf("rejected: %w", err)
	}
	return nil
}
