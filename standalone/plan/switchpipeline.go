package plan

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/fabric/pipeline"
	"github.com/distcache/distcache/layout"
)

// Standalone mode's stand-in for the ConfigMap or Secret of a
// SwitchFabric's spec.pipelineSource: a directory with a file per key, as
// Kubernetes mounts the object (Options.SwitchPipelineDir). An image
// source needs none: the fabric controller pulls the artefact itself,
// with the credentials of the local Docker config (`oras login`, `docker
// login`) standing for its pullSecretRef.

// switchPipelineSource is the pipelineSource of the cluster's
// switch-backed layers: one fabric controller programs every switch, so
// their fabrics must agree. Nil when none has one.
func switchPipelineSource(c *layout.Cluster) (*v1alpha1.PipelineSource, error) {
	var src *v1alpha1.PipelineSource
	seen := false
	for _, l := range c.Layers {
		if l.Software() {
			continue
		}
		if seen && !reflect.DeepEqual(src, l.PipelineSource) {
			return nil, fmt.Errorf("cannot run layer %s: its fabric's pipelineSource is not that of the other switch-backed layers, "+
				"and one fabric controller programs every switch: give their fabrics the same pipelineSource: %w", l.Name, ErrUnsupported)
		}
		src, seen = l.PipelineSource, true
	}
	return src, nil
}

// pipelineObject is the ConfigMap or Secret of src, and what it is.
func pipelineObject(src *v1alpha1.PipelineSource) (*v1alpha1.PipelineObjectRef, string) {
	switch {
	case src == nil:
		return nil, ""
	case src.ConfigMapRef != nil:
		return src.ConfigMapRef, "ConfigMap"
	case src.SecretRef != nil:
		return src.SecretRef, "Secret"
	}
	return nil, ""
}

// checkSwitchPipeline checks Options.SwitchPipelineDir against the
// switches' pipelineSource, makes it absolute and checks the build it
// holds against the pipeline the software switches run, so that a
// mismatch is `distcache up`'s own error.
func (o *Options) checkSwitchPipeline(c *layout.Cluster) error {
	src, err := switchPipelineSource(c)
	if err != nil {
		return err
	}
	ref, kind := pipelineObject(src)
	switch {
	case ref == nil && o.SwitchPipelineDir != "" && src != nil:
		return errors.New("cannot use --switch-pipeline-dir: the fabrics' pipelineSource is an image, which the fabric controller pulls itself")
	case ref == nil && o.SwitchPipelineDir != "":
		return errors.New("cannot use --switch-pipeline-dir: no SwitchFabric of the cluster sets a pipelineSource")
	case ref == nil:
		return nil
	case o.SwitchPipelineDir == "":
		return fmt.Errorf("cannot push the compiled program of %s %s: standalone mode has no %ss: pass its keys as files with distcache up --switch-pipeline-dir DIR (a file per key): %w",
			kind, ref.Name, kind, ErrUnsupported)
	}
	abs, err := filepath.Abs(o.SwitchPipelineDir)
	if err != nil {
		return fmt.Errorf("cannot use --switch-pipeline-dir %s: %w", o.SwitchPipelineDir, err)
	}
	o.SwitchPipelineDir = abs
	p4info, dc := pipelineFiles(ref.PipelineFiles, abs)
	if _, err := pipeline.FromFiles(softwareSwitchPipeline, p4info, dc); err != nil {
		return fmt.Errorf("cannot use --switch-pipeline-dir %s: %w", abs, err)
	}
	return nil
}

// softwareSwitchPipeline is the pipeline of the software switches
// standalone mode runs (`distcache fabric`'s default --pipeline).
const softwareSwitchPipeline = "distcache-v1model"

// pipelineFiles are the paths of a build's files in dir.
func pipelineFiles(pf v1alpha1.PipelineFiles, dir string) (p4info, deviceConfig string) {
	p4info, deviceConfig = pf.P4InfoKey, pf.DeviceConfigKey
	if p4info == "" {
		p4info = pipeline.DefaultP4InfoKey
	}
	if deviceConfig == "" {
		deviceConfig = pipeline.DefaultDeviceConfigKey
	}
	return filepath.Join(dir, p4info), filepath.Join(dir, deviceConfig)
}

// switchPipelineArgs are `distcache fabric`'s flags for the switches'
// pipelineSource (checked by checkSwitchPipeline).
func switchPipelineArgs(c *layout.Cluster, o Options) []string {
	src, _ := switchPipelineSource(c)
	if ref, _ := pipelineObject(src); ref != nil {
		p4info, dc := pipelineFiles(ref.PipelineFiles, o.SwitchPipelineDir)
		return []string{"--p4info=" + p4info, "--device-config=" + dc}
	}
	if src == nil || src.Image == nil {
		return nil
	}
	p4info, dc := pipelineFiles(src.Image.PipelineFiles, "")
	return []string{"--pipeline-image=" + src.Image.Reference, "--pipeline-image-p4info=" + p4info, "--pipeline-image-device-config=" + dc}
}
