package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/distcache/distcache/internal/buildinfo"
)

func newVersionCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, git commit and build date of this binary",
		Long: `Print the version, git commit and build date of this binary. The version is
the tag of the container image it ships in (make image).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			i := buildinfo.Get()
			switch output {
			case "text":
				cmd.Printf("distcache %s\ncommit:   %s\ndate:     %s\ngo:       %s\nplatform: %s\n",
					i.Version, orUnknown(i.Commit), orUnknown(i.Date), i.GoVersion, i.Platform)
			case "short":
				cmd.Println(i.Version)
			case "json":
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(i); err != nil {
					return fmt.Errorf("cannot print version: %w", err)
				}
			default:
				return fmt.Errorf("cannot print version: unknown --output %q (text, short or json)", output)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text, short (the version alone) or json")
	return cmd
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
