package resources

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ConflictError stops a restore with --existing=fail before anything changed:
// these objects exist on the target and differ from the bundle's.
type ConflictError struct{ Objects []ObjectKey }

func (e *ConflictError) Error() string {
	names := make([]string, len(e.Objects))
	for i, k := range e.Objects {
		names[i] = k.String()
	}
	return fmt.Sprintf("%d object(s) already exist on the target and differ from the bundle: %s; nothing was changed (use --existing=skip or --existing=update, or remove them)",
		len(names), strings.Join(names, ", "))
}

// UnreachableError means the target cluster could not be reached before any change.
type UnreachableError struct{ Err error }

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach the target cluster: %v; nothing was changed", e.Err)
}
func (e *UnreachableError) Unwrap() error { return e.Err }

// MissingAPIError means the target does not serve an API the bundle needs
// (the CRDs of MCE / the infrastructure operator, hive or metal3 are missing).
type MissingAPIError struct{ Resources []string }

func (e *MissingAPIError) Error() string {
	return fmt.Sprintf("the target cluster does not serve %s: install the multicluster engine (or the CRDs) first; nothing was changed",
		strings.Join(e.Resources, ", "))
}

// isUnreachable tells transport failures from answers of the API server.
func isUnreachable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false // the caller stopped, the cluster did not fail
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return false
	}
	var ue *url.Error
	var ne net.Error
	return errors.As(err, &ue) || errors.As(err, &ne)
}

// safeReason is the text of an apply error for a result: for Secrets only the
// API reason, since a validation message could quote data.
func safeReason(key ObjectKey, err error) string {
	if key.Kind == "Secret" && key.Group == "" {
		if r := apierrors.ReasonForError(err); r != "" {
			return "apply failed: " + string(r)
		}
		return "apply failed"
	}
	return "apply failed: " + err.Error()
}

// ApplyError is the failure of one object's apply. Its message never quotes
// the API server's text for a Secret (see safeReason); Unwrap gives the error.
type ApplyError struct {
	Object ObjectKey
	Err    error
}

func (e *ApplyError) Error() string {
	return "apply " + e.Object.String() + ": " + strings.TrimPrefix(safeReason(e.Object, e.Err), "apply failed: ")
}
func (e *ApplyError) Unwrap() error { return e.Err }
