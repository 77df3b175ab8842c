package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cueop/cueop/engine/golden"
)

func newTest(g *globals) *cobra.Command {
	var update bool
	var dir string
	cmd := &cobra.Command{
		Use:   "test",
		Short: "Run the golden cases (testdata/<kind>/<case>.txtar) offline",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			set, opts, err := g.loadForRender()
			if err != nil {
				return err
			}
			results, err := golden.Run(set, dir, update, opts)
			if err != nil {
				return err
			}
			return report(cmd, results)
		},
	}
	cmd.Flags().BoolVar(&update, "update", false, "rewrite the expected sections from what the templates render now")
	cmd.Flags().StringVar(&dir, "testdata", "./testdata", "directory of the golden cases")
	return cmd
}

func report(cmd *cobra.Command, results []golden.Result) error {
	failed := 0
	for _, r := range results {
		switch {
		case r.Err != nil:
			failed++
			fmt.Fprintf(cmd.ErrOrStderr(), "FAIL %s\n%v\n", r.Case, r.Err)
		case r.Updated:
			fmt.Fprintf(cmd.OutOrStdout(), "updated %s\n", r.Case)
		default:
			fmt.Fprintf(cmd.OutOrStdout(), "ok   %s\n", r.Case)
		}
	}
	if len(results) == 0 {
		return errors.New("no golden case found")
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d golden cases failed", failed, len(results))
	}
	return nil
}
