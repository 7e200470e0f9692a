// Package chaos holds no code: this directory is the Chaos Mesh experiments
// for DistCache on a Kubernetes cluster (one experiment per YAML file, plus a
// Schedule, a Workflow and the Job that runs `distcache check`). docs/chaos.md
// says how to run them. The package's tests apply every file to a real API
// server with Chaos Mesh's CRDs installed, run Chaos Mesh's own admission
// checks over them, and check that their selectors match the pods the
// operator creates.
package chaos
