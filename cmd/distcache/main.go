// Command distcache is the DistCache platform's single binary. Its
// subcommands run the parts of the system; `distcache sim` reproduces the
// DistCache paper's evaluation on the placement and routing core.
package main

import (
	"errors"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		// A command may choose its exit status (check: 1 fail, 2 could
		// not run); any other error is 1.
		var coded interface{ ExitCode() int }
		if errors.As(err, &coded) {
			os.Exit(coded.ExitCode())
		}
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
	root.AddCommand(newSimCommand(), newMapCommand(), newNodeCommand(), newShimCommand(), newRedisACLCommand(), newGatewayCommand(), newLoadgenCommand(), newOperatorCommand(),
		newUpCommand(), newStatusCommand(), newDownCommand(), newBenchCommand(), newCheckCommand(), newMalformedCommand(), newControlLoopCommand(),
		newSwitchCommand(), newFabricCommand(), newVersionCommand(), newBackupCommand(), newRestoreCommand())
	return root
}
