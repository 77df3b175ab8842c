// Package migrate is storage version migration: when a CRD's
// status.storedVersions lists versions other than its storage version (the
// storage version changed), it rewrites every stored CR of the kind, so that
// the API server stores each one anew at the storage version, and then sets
// status.storedVersions to the storage version alone. Only then may a later
// CRD stop serving the other versions (the schema guard refuses it before).
//
// A CR is rewritten by a merge patch that carries nothing but its
// resourceVersion, as the API server's own migrator does, sent to its status
// subresource (which stores the whole object, and which cueop may write
// for every kind): a CR already stored
// at the storage version encodes to the same bytes and costs no write (its
// resourceVersion stays), one stored at another version is written (its
// resourceVersion moves). A CR changed meanwhile (a conflict) is read again
// and rewritten; one deleted meanwhile is skipped. A CR whose rewrite the
// API server refuses (an admission policy, a rule its stored form breaks)
// does not stop the others: the pass goes on, counts and names it, and ends
// without touching status.storedVersions (RefusedError); the operator tries
// again with backoff, rewriting only the CRs refused (Migrator.Retry: every
// other CR is stored at the storage version already) when the pass ran
// whole in this process, else the whole pass. The count is kept in the
// checkpoint, so that a pass resumed after the refusal does not finish
// either. An API server that does not answer (no connection, a timeout,
// overload) stops the pass instead: it is resumed from its checkpoint.
//
// A CR with managedFields entries at another version than the storage
// version (what a client that wrote it at that version leaves) is written
// instead by a merge patch of the CR itself, carrying its resourceVersion
// and the entries moved to the storage version (MovedFields): once a
// version is not served, an entry at it makes every write of the CR fail,
// a status write included, and a write through a subresource cannot
// change managedFields. MoveFields does only that, for a kind with nothing
// left to migrate whose next CRD stops serving a version.
//
// The CRs are listed a page at a time (metadata only), at the pace of a
// token bucket under the client's own rate limit. After each page the
// list's continue token and the counts are kept in the CRD's annotation
// cueop.dev/storage-migration, so that a migration interrupted (the
// operator stopped, the leader changed) resumes from its last page; a token
// that expired meanwhile starts the pass again from the first page, which
// only costs requests. The CRD's StorageMigrating condition (the condition
// type Kubernetes' own migrator sets) says how far it got.
//
// It must not decide when a kind is migrated nor report it (the operator
// does), nor change what a CR holds: each is stored anew as it is.
package migrate
