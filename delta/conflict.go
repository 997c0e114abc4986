package delta

import (
	"errors"
	"fmt"
	"maps"
)

// ErrConflict is matched (errors.Is) by every *ConflictError.
var ErrConflict = errors.New("conflicting concurrent commit")

// ConflictKind says why a concurrent commit conflicts with ours.
type ConflictKind int

// Conflict kinds (DELTA.md "Concurrency").
const (
	// ConflictMetadata: a concurrent commit changed the table metadata (schema, partitioning,
	// properties) or created the table.
	ConflictMetadata ConflictKind = iota + 1
	// ConflictProtocol: a concurrent commit changed the protocol.
	ConflictProtocol
	// ConflictTransaction: a concurrent commit carries a txn for our appId — another instance
	// of the same flow is writing (ConcurrentTransactionException in Spark).
	ConflictTransaction
	// ConflictAppend: data was added concurrently to a table we overwrite.
	ConflictAppend
	// ConflictDelete: a file we remove was removed concurrently.
	ConflictDelete
	// ConflictDomain: a concurrent commit changed a metadata domain the commit depends on so
	// that the commit no longer meets its requirements: the delta.clustering domain of a
	// clustered table now names a column the commit's files carry no statistics for.
	ConflictDomain
)

// ConflictError reports that the commit at Version conflicts with ours; retrying needs a new
// snapshot (and, for metadata/protocol changes, possibly new data files).
type ConflictError struct {
	Version int64        // the conflicting commit
	Kind    ConflictKind // why it conflicts
	Detail  string       // human-readable reason
	// AppID is the appId of a ConflictTransaction over a CommitRequest's Txns or ExpectTxn
	// ("" otherwise).
	AppID string
}

// Error names the conflicting version and the reason.
func (e *ConflictError) Error() string {
	return fmt.Sprintf("commit conflict with version %d: %s", e.Version, e.Detail)
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// NoTxn in CommitRequest.ExpectTxn means: no txn action for the appId yet.
const NoTxn int64 = -1 << 63

// guardsTxn reports whether a txn for appID touches what req's Txns or ExpectTxn guard.
func (req CommitRequest) guardsTxn(appID string) bool {
	if _, ok := req.ExpectTxn[appID]; ok {
		return true
	}
	for _, t := range req.Txns {
		if t.AppID == appID {
			return true
		}
	}
	return false
}

// checkExpectedTxns compares req.ExpectTxn with the read snapshot's txn versions (a table
// being created has none).
func checkExpectedTxns(req CommitRequest) error {
	for app, want := range req.ExpectTxn {
		have, ok := NoTxn, false
		var version int64 = -1
		if req.Read != nil {
			var t Txn
			if t, ok = req.Read.txns[app]; ok {
				have = t.Version
			}
			version = req.Read.version
		}
		if have == want {
			continue
		}
		hs, ws := "none", "none"
		if ok {
			hs = fmt.Sprint(have)
		}
		if want != NoTxn {
			ws = fmt.Sprint(want)
		}
		return &ConflictError{Version: version, Kind: ConflictTransaction, AppID: app,
			Detail: fmt.Sprintf("appId %q has txn version %s in the table, not %s as expected", app, hs, ws)}
	}
	return nil
}

// checkConflict decides whether the concurrent commit at version (by someone else) conflicts
// with req.
func checkConflict(version int64, other []Action, req CommitRequest, removed map[string]bool) error {
	if req.Read == nil {
		return &ConflictError{Version: version, Kind: ConflictMetadata, Detail: "the table was created concurrently"}
	}
	for _, a := range other {
		switch {
		case a.MetaData != nil:
			return &ConflictError{Version: version, Kind: ConflictMetadata, Detail: "table metadata changed concurrently"}
		case a.Protocol != nil:
			return &ConflictError{Version: version, Kind: ConflictProtocol, Detail: "table protocol changed concurrently"}
		case a.Txn != nil && req.Txn != nil && a.Txn.AppID == req.Txn.AppID:
			return &ConflictError{Version: version, Kind: ConflictTransaction,
				Detail: fmt.Sprintf("concurrent transaction: appId %q committed txn version %d; another writer of the same flow is running", a.Txn.AppID, a.Txn.Version)}
		case a.Txn != nil && req.guardsTxn(a.Txn.AppID):
			return &ConflictError{Version: version, Kind: ConflictTransaction, AppID: a.Txn.AppID,
				Detail: fmt.Sprintf("concurrent transaction: appId %q committed txn version %d", a.Txn.AppID, a.Txn.Version)}
		case a.Remove != nil && removed[a.Remove.Path]:
			return &ConflictError{Version: version, Kind: ConflictDelete, Detail: "file " + a.Remove.Path + " was removed concurrently"}
		case a.Add != nil && a.Add.DataChange && req.Mode == Overwrite:
			return &ConflictError{Version: version, Kind: ConflictAppend, Detail: "data was added concurrently to the table being overwritten"}
		}
	}
	return nil
}

// checkDomains checks the domainMetadata actions of the concurrent commit at version
// (PROTOCOL.md "Domain Metadata": writers conflict-check the domains their transaction
// depends on) and returns the table's domains after it: domains is the state after the
// previous concurrent commits, nil for the read snapshot's, and is cloned before it changes.
//
// It follows delta-spark's ConflictChecker: a concurrent metaData change always conflicts
// (checkConflict), and a concurrent domainMetadata conflicts only with a transaction that
// writes the same domain, which a CommitRequest never does. A commit does depend on one domain
// it reads: an append to a clustered table must give the clustering columns statistics
// ([checkClustering]), so when a concurrent commit changes delta.clustering (Spark's ALTER
// TABLE … CLUSTER BY, or CLUSTER BY NONE) the check is redone against the new columns. If they
// pass, the commit goes ahead as delta-spark's blind append does (its files are unclustered
// either way, which the protocol allows); if not, it fails with a ConflictDomain
// *ConflictError naming the column.
func checkDomains(version int64, other []Action, req CommitRequest, domains map[string]DomainMetadata) (map[string]DomainMetadata, error) {
	clustering := false
	for _, a := range other {
		d := a.DomainMetadata
		if d == nil {
			continue
		}
		if domains == nil {
			domains = maps.Clone(req.Read.domains)
			if domains == nil {
				domains = map[string]DomainMetadata{}
			}
		}
		if d.Removed {
			delete(domains, d.Domain)
		} else {
			domains[d.Domain] = *d
		}
		clustering = clustering || d.Domain == ClusteringDomain
	}
	if !clustering {
		return domains, nil
	}
	proto, meta := req.target()
	if err := checkClustering(proto, meta, domains); err != nil {
		cols := "none"
		if d, ok := domains[ClusteringDomain]; ok {
			cols = d.Configuration
		}
		return nil, &ConflictError{Version: version, Kind: ConflictDomain,
			Detail: fmt.Sprintf("the clustering columns of the table (domain %s) changed concurrently to %s, which this commit cannot write: %v", ClusteringDomain, cols, err)}
	}
	return domains, nil
}
