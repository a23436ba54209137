// Package values is the value model of a Kafka pipe's SELECT: the typed
// values its expressions compute (Value, Kind), their text forms, casts
// (Target), comparisons, three-valued truth (Tri), arithmetic, LIKE, and
// the scalar functions computed from their arguments alone (Funcs).
//
// The semantics (what a cast accepts, how JSON acts as a scalar, which
// timestamp texts parse) are documented for users in package recordeval,
// which compiles expressions into nodes that call into this package. The
// functions that need the compiled expression (constant regular
// expressions, date formats, memoized JSON parses) live there too.
//
// Operations that make bytes carve them from a Ctx, the scratch memory of
// the record being evaluated, so that evaluating a record allocates
// nothing in the common case; a Value's bytes are valid until the Ctx is
// reset for the next record.
//
// Of lakepipe's packages, values imports only rawjson, sqlast, schemas and
// chstore (ParseTime, so that text reads as a timestamp the way ClickHouse
// columns do); it must not know about records, batches or the compiler.
package values
