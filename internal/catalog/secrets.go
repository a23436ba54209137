package catalog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/lakepipe/lakepipe/internal/seal"
)

// Plaintext is the key id SecretStatus counts unsealed secrets under.
const Plaintext = "plaintext"

// SecretStatus counts the catalog's secrets; it never reads their values.
type SecretStatus struct {
	// ByKey counts the live objects' secrets by the id of the key that
	// sealed them; those stored unsealed count under Plaintext.
	ByKey map[string]int
	// Stale counts rows of earlier versions of objects that still hold a
	// secret (until a mutation or a merge removes them).
	Stale int
}

// liveSecrets are the current rows of objects holding a secret.
const liveSecrets = "SELECT kind, schema, name, argMax(spec, version), argMax(secret, version), argMax(deleted, version), argMax(updated_at, version), max(version) " +
	"FROM lakepipe.objects GROUP BY kind, schema, name HAVING argMax(secret, version) != '' ORDER BY kind, schema, name"

// SecretStatus counts the catalog's secrets by sealing key.
func (c *Catalog) SecretStatus(ctx context.Context) (SecretStatus, error) {
	st := SecretStatus{ByKey: map[string]int{}}
	res, err := c.st.Query(ctx, liveSecrets)
	if err != nil {
		return st, fmt.Errorf("read catalog: %w", err)
	}
	for _, r := range res.Rows {
		id, ok := seal.StoredKeyID(r[4].(string))
		if !ok {
			id = Plaintext
		}
		st.ByKey[id]++
	}
	n, err := c.st.Strings(ctx, "SELECT toString(sum(stale)) FROM (SELECT toInt64(countIf(secret != '')) - toInt64(argMax(secret, version) != '') AS stale FROM lakepipe.objects GROUP BY kind, schema, name)")
	if err != nil {
		return st, fmt.Errorf("read catalog: %w", err)
	}
	if len(n) == 1 {
		st.Stale, _ = strconv.Atoi(n[0])
	}
	return st, nil
}

// ResealResult is what Reseal did.
type ResealResult struct {
	Resealed int // secrets sealed again with the current key
	Current  int // secrets already sealed with it
}

// Reseal seals every secret of the catalog that is not sealed with the
// sealer's current key (sealed with an older key, or stored in plaintext
// before sealing existed) again with the current key, and removes the
// rows of earlier versions that hold a secret. Afterwards no key but the
// current one opens any secret of the catalog. Each object is rewritten
// with its spec unchanged; an object that changes while Reseal runs is
// left as the change wrote it. Objects whose secret does not open are
// skipped and reported in the error, after the others are done; running
// Reseal again is harmless.
func (c *Catalog) Reseal(ctx context.Context) (ResealResult, error) {
	var out ResealResult
	current := c.sealer.CurrentID()
	if current == "" {
		return out, seal.ErrNoKey
	}
	res, err := c.st.Query(ctx, liveSecrets)
	if err != nil {
		return out, fmt.Errorf("read catalog: %w", err)
	}
	var errs []error
	for _, r := range res.Rows {
		kind, schema, name := Kind(r[0].(string)), r[1].(string), r[2].(string)
		spec, stored, deleted, updated, version := r[3].(string), r[4].(string), r[5].(uint8), r[6].(time.Time), r[7].(uint64)
		if id, _ := seal.StoredKeyID(stored); id == current {
			out.Current++
			if err := c.removeOlderSecrets(ctx, kind, schema, name, version); err != nil {
				errs = append(errs, fmt.Errorf("%s %s: %w", kind, name, err))
			}
			continue
		}
		aad := secretAAD(kind, schema, name)
		plain, err := c.sealer.Open(stored, aad)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", kind, name, err))
			continue
		}
		resealed, err := c.sealer.Seal(plain, aad)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", kind, name, err))
			continue
		}
		// Narrow the window of a concurrent change: skip an object
		// rewritten since it was read (that write sealed with a key of
		// its own; a second Reseal picks it up if needed).
		now, err := c.st.Strings(ctx, "SELECT toString(max(version)) FROM lakepipe.objects WHERE "+where(kind, schema, name))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", kind, name, err))
			continue
		}
		if len(now) != 1 || now[0] != strconv.FormatUint(version, 10) {
			continue
		}
		if err := c.writeAt(ctx, kind, schema, name, spec, resealed, int(deleted), plain, updated); err != nil {
			errs = append(errs, err)
			continue
		}
		out.Resealed++
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("%d secrets not resealed: %w", len(errs), errors.Join(errs...))
	}
	return out, nil
}
