// Command distcache is the DistCache platform's single binary. Its
// subcommands run the parts of the system; `distcache sim` reproduces the
// DistCache paper's evaluation on the placement and routing core.
package main

import (
	"os"

	"github.com/spf13/cobra"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "distcache",
		Short:         "Multi-layer caching tier that keeps Redis-backed key-value stores balanced under skewed load",
		SilenceUsage:  true,
		SilenceErrors: false,
	}
	root.AddCommand(newSimCommand(), newMapCommand(), newNodeCommand(), newShimCommand(), newLoadgenCommand(), newOperatorCommand(),
		newUpCommand(), newStatusCommand(), newDownCommand(), newBenchCommand(), newControlLoopCommand())
	return root
}
