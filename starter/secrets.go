package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"

	"github.com/lakepipe/lakepipe/internal/catalog"
)

const secretsUsage = `Usage:
  lakepipe secrets status [flags]   count the catalog's secrets by sealing key id (never their values)
  lakepipe secrets rotate [flags]   seal every secret again with the current key (LAKEPIPE_SECRET_KEY or
                                    LAKEPIPE_SECRET_KEY_FILE), opening them with any configured key
                                    (LAKEPIPE_SECRET_OLD_KEYS); plaintext secrets get sealed too

See "Sealed secrets" in docs/security.md.
`

// runSecrets runs `lakepipe secrets status|rotate`.
func runSecrets(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "status" && args[0] != "rotate") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprint(stdout, secretsUsage)
			return 0
		}
		fmt.Fprint(stderr, secretsUsage)
		return 2
	}
	action := args[0]
	var conn connFlags
	fs := flag.NewFlagSet("lakepipe secrets "+action, flag.ContinueOnError)
	fs.SetOutput(stderr)
	conn.register(fs)
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "lakepipe secrets %s: unexpected argument %q\n", action, fs.Arg(0))
		return 2
	}
	cat, closeCat, err := openCatalog(ctx, &conn)
	if err != nil {
		fmt.Fprintf(stderr, "lakepipe secrets %s: %v\n", action, err)
		return 1
	}
	defer closeCat()
	if action == "status" {
		return secretsStatus(ctx, cat, stdout, stderr)
	}
	res, err := cat.Reseal(ctx)
	fmt.Fprintf(stdout, "%d secrets resealed with key %s, %d already sealed with it\n", res.Resealed, cat.Sealer().CurrentID(), res.Current)
	if err != nil {
		fmt.Fprintln(stderr, "lakepipe secrets rotate:", err)
		return 1
	}
	return 0
}

func secretsStatus(ctx context.Context, cat *catalog.Catalog, stdout, stderr io.Writer) int {
	st, err := cat.SecretStatus(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "lakepipe secrets status:", err)
		return 1
	}
	current := cat.Sealer().CurrentID()
	if current == "" {
		current = "none"
	}
	fmt.Fprintf(stdout, "current key: %s\n", current)
	ids := make([]string, 0, len(st.ByKey))
	for id := range st.ByKey {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	fmt.Fprintln(stdout, "KEY_ID\tSECRETS")
	for _, id := range ids {
		fmt.Fprintf(stdout, "%s\t%d\n", id, st.ByKey[id])
	}
	fmt.Fprintf(stdout, "older rows still holding a secret: %d\n", st.Stale)
	return 0
}
