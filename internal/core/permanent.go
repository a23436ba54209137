package core

import (
	"errors"

	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/objstore"
)

// ErrPermanent marks an error that retrying cannot fix: the pipe's COPY no
// longer resolves (its table, volume or connection is gone, its OPTIONS no
// longer parse) or a server refuses the credentials. A pipe that meets one
// pauses with it as its invalid_reason instead of retrying forever; fixing
// the cause and resuming the pipe loads what waited. Errors that go away
// by themselves (network, a server restarting) are not marked.
var ErrPermanent = errors.New("permanent")

type permanentError struct{ err error }

func (p *permanentError) Error() string { return p.err.Error() }

func (p *permanentError) Unwrap() error { return p.err }

func (p *permanentError) Is(target error) bool { return target == ErrPermanent }

// permanent marks err as one retrying cannot fix (nil stays nil).
func Permanent(err error) error {
	if err == nil || errors.Is(err, ErrPermanent) {
		return err
	}
	return &permanentError{err: err}
}

// permanentCodes are the ClickHouse errors of a load that no retry fixes:
// the target, or a column of it, is gone or changed, or the server refuses
// lakepipe's user. A server that restarts answers with network errors, not
// with these.
var permanentCodes = []int32{
	chstore.CodeUnknownTable,
	chstore.CodeUnknownDatabase,
	16,  // NO_SUCH_COLUMN_IN_TABLE
	47,  // UNKNOWN_IDENTIFIER
	192, // UNKNOWN_USER
	193, // WRONG_PASSWORD
	194, // REQUIRED_PASSWORD
	497, // ACCESS_DENIED (current releases)
	516, // AUTHENTICATION_FAILED (current releases)
}

// IsPermanent reports whether err is one retrying cannot fix (see
// ErrPermanent).
func IsPermanent(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrPermanent) || errors.Is(err, objstore.ErrDenied) {
		return true
	}
	for _, c := range permanentCodes {
		if chstore.IsCode(err, c) {
			return true
		}
	}
	return false
}
