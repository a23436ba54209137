package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/lakepipe/lakepipe/internal/engine"
)

const tokensUsage = `Usage:
  lakepipe tokens create NAME --scope table:SCHEMA.TABLE|schema:SCHEMA|all
                                  make a write-service token and print it (the one time it is shown)
  lakepipe tokens list            the tokens, their scopes and when they were made (never the tokens)
  lakepipe tokens revoke NAME     refuse the token from now on (within the service's 5 s cache)

A token writes only what its scope covers: other tables get 403. The service's own
LAKEPIPE_TUNNEL_TOKEN writes everything. Only the token's SHA-256 is stored.
`

// runTokens runs `lakepipe tokens create|list|revoke`.
func runTokens(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, tokensUsage)
		return 2
	}
	action := args[0]
	switch action {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, tokensUsage)
		return 0
	case "create", "list", "revoke":
	default:
		fmt.Fprint(stderr, tokensUsage)
		return 2
	}
	var conn connFlags
	fs := flag.NewFlagSet("lakepipe tokens "+action, flag.ContinueOnError)
	fs.SetOutput(stderr)
	conn.register(fs)
	scopeFlag := fs.String("scope", "", "create: what the token writes: table:SCHEMA.TABLE, schema:SCHEMA or all")
	// Flags may come after the name: parse what follows it too.
	rest := args[1:]
	var name string
	if len(rest) > 0 && len(rest[0]) > 0 && rest[0][0] != '-' {
		name, rest = rest[0], rest[1:]
	}
	if err := fs.Parse(rest); err != nil {
		return 2
	}
	if name == "" && fs.NArg() > 0 {
		name = fs.Arg(0)
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "lakepipe tokens %s: %v\n", action, err)
		return 1
	}
	if action != "list" && name == "" {
		fmt.Fprintf(stderr, "lakepipe tokens %s: name the token\n\n%s", action, tokensUsage)
		return 2
	}
	var scope engine.TokenScope
	if action == "create" {
		if *scopeFlag == "" {
			fmt.Fprintln(stderr, "lakepipe tokens create: give --scope table:SCHEMA.TABLE, schema:SCHEMA or all")
			return 2
		}
		var err error
		if scope, err = engine.ParseTokenScope(*scopeFlag); err != nil {
			fmt.Fprintln(stderr, "lakepipe tokens create:", err)
			return 2
		}
	}
	cat, closeCat, err := openCatalog(ctx, &conn)
	if err != nil {
		return fail(err)
	}
	defer closeCat()
	ecfg, err := conn.engineConfig()
	if err != nil {
		return fail(err)
	}
	eng := engine.New(cat, ecfg)
	switch action {
	case "create":
		tok, err := eng.CreateWriteToken(ctx, name, scope)
		if err != nil {
			return fail(err)
		}
		fmt.Fprintln(stderr, "write token", name, "for", scope.String()+": keep it now, it is not shown again")
		fmt.Fprintln(stdout, tok)
	case "list":
		toks, err := eng.WriteTokens(ctx)
		if err != nil {
			return fail(err)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "name\tscope\tcreated_time")
		for _, t := range toks {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Name, t.Scope, t.CreatedAt.Format("2006-01-02 15:04:05"))
		}
		tw.Flush()
	case "revoke":
		if err := eng.RevokeWriteToken(ctx, name); err != nil {
			return fail(err)
		}
		fmt.Fprintln(stdout, "write token", name, "revoked")
	}
	return 0
}
