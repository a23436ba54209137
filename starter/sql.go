package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/engine"
	"github.com/lakepipe/lakepipe/internal/orchestrator"
	"github.com/lakepipe/lakepipe/internal/rowio"
	"github.com/lakepipe/lakepipe/internal/sqlparse"
)

type sqlFlags struct {
	conn            connFlags
	exec            string
	file            string
	format          string
	maxRows         int
	check           bool
	continueOnError bool
	echo            bool
}

func runSQL(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var f sqlFlags
	fs := flag.NewFlagSet("lakepipe sql", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f.conn.register(fs)
	fs.StringVar(&f.exec, "e", "", "statements to run, separated by ';'")
	fs.StringVar(&f.file, "f", "", "file of statements to run ('-' for stdin)")
	fs.StringVar(&f.format, "format", env("LAKEPIPE_FORMAT", "table"), "result format: table, csv, tsv or json (LAKEPIPE_FORMAT)")
	fs.IntVar(&f.maxRows, "max-rows", defaultMaxRows, "rows the table format shows of a result, counting the rest (0: all, held in memory up to LAKEPIPE_MAX_RESULT_BYTES)")
	fs.BoolVar(&f.check, "check", false, "parse and validate only, without running anything (no server needed)")
	fs.BoolVar(&f.continueOnError, "continue-on-error", false, "run the remaining statements after one fails (the exit code still reports the failure)")
	fs.BoolVar(&f.echo, "echo", false, "print each statement before its result")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "lakepipe sql: unexpected argument %q (quote the SQL and pass it with -e)\n", fs.Arg(0))
		return 2
	}
	pr, err := newPrinter(f.format, stdout, f.maxRows)
	if err != nil {
		fmt.Fprintln(stderr, "lakepipe sql:", err)
		return 2
	}
	var src, where string
	switch {
	case f.exec != "" && f.file != "":
		fmt.Fprintln(stderr, "lakepipe sql: give -e or -f, not both")
		return 2
	case f.exec != "":
		src, where = f.exec, "-e"
	case f.file != "" && f.file != "-":
		fh, err := os.Open(f.file)
		if err != nil {
			fmt.Fprintln(stderr, "lakepipe sql:", err)
			return 1
		}
		src, err = readScript(fh)
		fh.Close()
		if err != nil {
			fmt.Fprintf(stderr, "lakepipe sql: %s: %v\n", f.file, err)
			return 1
		}
		where = f.file
	default:
		if isTerminal(stdin) && !f.check {
			return interactive(ctx, &f, stdin, stdout, stderr, pr)
		}
		if src, err = readScript(stdin); err != nil {
			fmt.Fprintln(stderr, "lakepipe sql: read stdin:", err)
			return 1
		}
		where = "stdin"
	}
	chunks, err := sqlparse.Split(src)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", where, err)
		return 1
	}
	if f.exec != "" {
		warnSecretInArgs(chunks, stderr)
	}
	if f.check {
		return check(chunks, where, f.conn.schema, stdout, stderr)
	}
	eng, closeFn, err := connect(ctx, &f.conn)
	if err != nil {
		fmt.Fprintln(stderr, "lakepipe sql:", err)
		return 1
	}
	defer closeFn()
	failed := false
	for i, c := range chunks {
		if err := runOne(ctx, eng, c, f.echo, pr, stdout); err != nil {
			failed = true
			fmt.Fprintf(stderr, "%s: statement %d (line %d): %s\n", where, i+1, c.Start.Line, explain(err))
			if !f.continueOnError {
				if i+1 < len(chunks) {
					fmt.Fprintf(stderr, "%s: stopped; %d statement(s) after it were not run (--continue-on-error runs them)\n", where, len(chunks)-i-1)
				}
				return 1
			}
		}
	}
	if failed {
		return 1
	}
	return 0
}

// connect opens ClickHouse and the catalog, and an engine that starts
// workflows through Temporal.
func connect(ctx context.Context, c *connFlags) (*engine.Engine, func(), error) {
	tc, err := c.temporalConfig()
	if err != nil {
		return nil, nil, err
	}
	cat, closeStore, err := openCatalog(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	orch := orchestrator.New(tc)
	ecfg, err := c.engineConfig()
	if err != nil {
		closeStore()
		return nil, nil, err
	}
	eng := engine.New(cat, ecfg).WithOrchestrator(orch)
	return eng, func() { orch.Close(); closeStore() }, nil
}

// openCatalog opens ClickHouse and the catalog in it; the func closes them.
func openCatalog(ctx context.Context, c *connFlags) (*catalog.Catalog, func(), error) {
	cfg, err := c.clickhouseConfig()
	if err != nil {
		return nil, nil, err
	}
	st, err := chstore.Open(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	cat, err := catalog.Open(ctx, st)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return cat, func() { st.Close() }, nil
}

// warnSecretInArgs warns, once, when a statement given with -e holds a
// secret (a connection's ACCESS_KEY, a READ_KAFKA password): the command
// line is visible to every user of the machine in the process list.
// Statements that do not parse are not looked into; running them reports
// their error.
func warnSecretInArgs(chunks []sqlparse.Chunk, stderr io.Writer) {
	for _, c := range chunks {
		if stmt, err := sqlparse.ParseChunk(c); err == nil && core.HasSecret(stmt) {
			fmt.Fprintln(stderr, "lakepipe sql: warning: the statement holds a secret: -e puts it in the process list; use -f FILE or standard input")
			return
		}
	}
}

func runOne(ctx context.Context, eng *engine.Engine, c sqlparse.Chunk, echo bool, pr printer, stdout io.Writer) error {
	stmt, err := sqlparse.ParseChunk(c)
	if err != nil {
		return err
	}
	if echo {
		fmt.Fprintln(stdout, core.Redact(stmt)+";")
	}
	if sink := pr.sink(); sink != nil {
		ctx = core.WithRowSink(ctx, sink)
	}
	res, err := eng.Exec(ctx, stmt)
	if err != nil {
		if f, ok := pr.(interface{ flush() error }); ok {
			_ = f.flush() // the rows written before the failure
		}
		return err
	}
	return pr.print(res)
}

func explain(err error) string {
	msg := err.Error()
	if errors.Is(err, core.ErrNotSupportedYet) {
		msg += " — this statement parses, and a later lakepipe release runs it"
	}
	return msg
}

func check(chunks []sqlparse.Chunk, where, schema string, stdout, stderr io.Writer) int {
	bad := 0
	for i, c := range chunks {
		stmt, err := sqlparse.ParseChunk(c)
		if err == nil {
			err = engine.Check(schema, stmt)
		}
		if err != nil {
			bad++
			fmt.Fprintf(stderr, "%s: statement %d (line %d): %v\n", where, i+1, c.Start.Line, err)
		}
	}
	if bad > 0 {
		fmt.Fprintf(stderr, "%s: %d of %d statements have errors\n", where, bad, len(chunks))
		return 1
	}
	fmt.Fprintf(stdout, "%s: %d statements OK\n", where, len(chunks))
	return 0
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// interactive reads statements at a prompt until EOF or \q; a statement
// runs when its line ends with ';'.
func interactive(ctx context.Context, f *sqlFlags, stdin io.Reader, stdout, stderr io.Writer, pr printer) int {
	eng, closeFn, err := connect(ctx, &f.conn)
	if err != nil {
		fmt.Fprintln(stderr, "lakepipe sql:", err)
		return 1
	}
	defer closeFn()
	fmt.Fprintln(stdout, "lakepipe sql — statements end with ';', \\q quits")
	in := bufio.NewScanner(stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	var buf strings.Builder
	prompt := func() {
		if buf.Len() == 0 {
			fmt.Fprint(stdout, "lakepipe> ")
		} else {
			fmt.Fprint(stdout, "       -> ")
		}
	}
	prompt()
	for in.Scan() {
		line := in.Text()
		if buf.Len() == 0 && (strings.TrimSpace(line) == `\q` || strings.EqualFold(strings.TrimSpace(line), "quit")) {
			return 0
		}
		buf.WriteString(line + "\n")
		if strings.HasSuffix(strings.TrimSpace(line), ";") {
			chunks, err := sqlparse.Split(buf.String())
			buf.Reset()
			if err != nil {
				fmt.Fprintln(stderr, err)
			}
			for _, c := range chunks {
				if err := runOne(ctx, eng, c, false, pr, stdout); err != nil {
					fmt.Fprintln(stderr, "error:", explain(err))
				}
			}
		}
		prompt()
	}
	fmt.Fprintln(stdout)
	return 0
}

// readScript reads a whole SQL script, at most LAKEPIPE_MAX_SCRIPT_BYTES
// of it (rowio.Limits.MaxScriptBytes): it is split into statements
// before the first runs.
func readScript(r io.Reader) (string, error) {
	limits, err := rowio.LimitsFromEnv(os.Getenv)
	if err != nil {
		return "", err
	}
	limit := limits.WithDefaults().MaxScriptBytes
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return "", err
	}
	if int64(len(b)) > limit {
		return "", fmt.Errorf("%w; load data with COPY INTO from files rather than in statements, or split the script",
			&rowio.LimitError{Limit: "MaxScriptBytes", Value: limit, What: "the script holds more SQL than one run reads"})
	}
	return string(b), nil
}
