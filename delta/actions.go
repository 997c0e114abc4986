package delta

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Action is one line of a Delta commit file (or one row of a checkpoint): exactly one field is
// set. Unknown action kinds (cdc, checkpointMetadata, sidecar, …) are skipped on read, as
// PROTOCOL.md "Protocol Evolution" requires of readers.
type Action struct {
	CommitInfo     *CommitInfo     `json:"commitInfo,omitempty"`     // provenance; first line of every commit
	Protocol       *Protocol       `json:"protocol,omitempty"`       // reader/writer versions and features
	MetaData       *Metadata       `json:"metaData,omitempty"`       // schema, partitioning, properties
	Txn            *Txn            `json:"txn,omitempty"`            // application progress (exactly-once)
	Add            *Add            `json:"add,omitempty"`            // a data file joins the table
	Remove         *Remove         `json:"remove,omitempty"`         // a data file leaves the table (tombstone)
	DomainMetadata *DomainMetadata `json:"domainMetadata,omitempty"` // named configuration domain
}

// Protocol is the protocol action (PROTOCOL.md "Protocol Evolution"). ReaderFeatures is
// written only when MinReaderVersion is 3 and WriterFeatures only when MinWriterVersion is 7
// (a feature list at a lower version breaks kernel-based readers); at those versions the lists
// are always written, possibly empty.
type Protocol struct {
	MinReaderVersion int      `json:"minReaderVersion"`         // 1, 2 or 3
	MinWriterVersion int      `json:"minWriterVersion"`         // 1 to 7
	ReaderFeatures   []string `json:"readerFeatures,omitempty"` // only at reader version 3
	WriterFeatures   []string `json:"writerFeatures,omitempty"` // only at writer version 7
}

// MarshalJSON writes the feature lists exactly when the protocol versions call for them.
func (p Protocol) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"minReaderVersion":%d,"minWriterVersion":%d`, p.MinReaderVersion, p.MinWriterVersion)
	if p.MinReaderVersion >= 3 {
		b.WriteString(`,"readerFeatures":`)
		writeStringList(&b, p.ReaderFeatures)
	}
	if p.MinWriterVersion >= 7 {
		b.WriteString(`,"writerFeatures":`)
		writeStringList(&b, p.WriterFeatures)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func writeStringList(b *bytes.Buffer, l []string) {
	if l == nil {
		l = []string{}
	}
	enc, _ := json.Marshal(l)
	b.Write(enc)
}

// Format is metaData.format: the data file encoding. Provider is always "parquet" for tables
// this package accepts.
type Format struct {
	Provider string            `json:"provider"` // "parquet"
	Options  map[string]string `json:"options"`  // always {} in practice
}

// Metadata is the metaData action (PROTOCOL.md "Change Metadata"). SchemaString holds the
// table schema as Delta JSON ([StructType]); Configuration holds table properties such as
// delta.checkpointInterval; CreatedTime is in milliseconds since the Unix epoch.
type Metadata struct {
	ID               string            `json:"id"`                    // table UUID
	Name             *string           `json:"name,omitempty"`        // optional user label
	Description      *string           `json:"description,omitempty"` // optional user label
	Format           Format            `json:"format"`                // data file format
	SchemaString     string            `json:"schemaString"`          // Delta JSON schema (ParseSchema)
	PartitionColumns []string          `json:"partitionColumns"`      // top-level columns, in directory order
	Configuration    map[string]string `json:"configuration"`         // table properties (delta.*)
	CreatedTime      *int64            `json:"createdTime,omitempty"` // ms since the Unix epoch
}

// Schema parses SchemaString.
func (m *Metadata) Schema() (*StructType, error) {
	return ParseSchema(m.SchemaString)
}

// Txn is the txn (SetTransaction) action (PROTOCOL.md "Transaction Identifiers"): the
// application-specific Version (e.g. a streamkit epoch) committed by application AppID.
// LastUpdated is in milliseconds since the Unix epoch.
type Txn struct {
	AppID       string `json:"appId"`                 // application id, e.g. a flow id
	Version     int64  `json:"version"`               // application version, e.g. an epoch
	LastUpdated *int64 `json:"lastUpdated,omitempty"` // ms since the Unix epoch; always set by Commit
}

// DeletionVector is a deletion vector descriptor (PROTOCOL.md "Deletion Vector Descriptor
// Schema"): the rows of an add's data file that are deleted. [ReadDeletionVector] loads them;
// this package never writes new deletion vectors, it carries them through (checkpoints,
// removes) from other writers.
type DeletionVector struct {
	StorageType    string `json:"storageType"`           // "u" (relative path), "p" (absolute) or "i" (inline)
	PathOrInlineDv string `json:"pathOrInlineDv"`        // encoded location or inline bitmap
	Offset         *int32 `json:"offset,omitempty"`      // byte offset in the DV file
	SizeInBytes    int32  `json:"sizeInBytes"`           // size of the serialized DV
	Cardinality    int64  `json:"cardinality"`           // number of deleted rows
	MaxRowIndex    *int64 `json:"maxRowIndex,omitempty"` // largest deleted row index
}

// UniqueID is the deletion vector's unique id (storageType + pathOrInlineDv [+ "@" offset]).
func (d *DeletionVector) UniqueID() string {
	if d == nil {
		return ""
	}
	id := d.StorageType + d.PathOrInlineDv
	if d.Offset != nil {
		id += "@" + strconv.Itoa(int(*d.Offset))
	}
	return id
}

// Add is the add action (PROTOCOL.md "Add File and Remove File"). Path is a relative URI
// (percent-encoded, see [PartitionPath]); PartitionValues maps every partition column to its
// serialized value, nil meaning null; Size is in bytes; ModificationTime in ms since the epoch;
// Stats is the per-file statistics JSON, stored as a string.
type Add struct {
	Path                    string             `json:"path"`                              // relative URI, percent-encoded (EncodePath)
	PartitionValues         map[string]*string `json:"partitionValues"`                   // column → serialized value; nil = null; {} when unpartitioned
	Size                    int64              `json:"size"`                              // exact file size in bytes
	ModificationTime        int64              `json:"modificationTime"`                  // ms since the Unix epoch
	DataChange              bool               `json:"dataChange"`                        // true for appends; false in checkpoints and compactions
	Stats                   string             `json:"stats,omitempty"`                   // statistics JSON document, as a string
	Tags                    map[string]string  `json:"tags,omitempty"`                    // free-form file tags
	DeletionVector          *DeletionVector    `json:"deletionVector,omitempty"`          // deleted rows; carried through, never made by this package
	BaseRowID               *int64             `json:"baseRowId,omitempty"`               // row tracking (not written by this package)
	DefaultRowCommitVersion *int64             `json:"defaultRowCommitVersion,omitempty"` // row tracking (not written by this package)
	ClusteringProvider      *string            `json:"clusteringProvider,omitempty"`      // clustered tables (not written by this package)
}

// Remove is the remove action. Path is byte-identical to the removed add's path;
// DeletionTimestamp is in ms since the epoch.
type Remove struct {
	Path                    string             `json:"path"`                              // byte-identical to the add's path
	DeletionTimestamp       *int64             `json:"deletionTimestamp,omitempty"`       // ms since the Unix epoch
	DataChange              bool               `json:"dataChange"`                        // true when rows leave the table
	ExtendedFileMetadata    *bool              `json:"extendedFileMetadata,omitempty"`    // true when PartitionValues and Size are set
	PartitionValues         map[string]*string `json:"partitionValues,omitempty"`         // copied from the add
	Size                    *int64             `json:"size,omitempty"`                    // copied from the add, bytes
	Stats                   string             `json:"stats,omitempty"`                   // optional; not kept in checkpoints
	Tags                    map[string]string  `json:"tags,omitempty"`                    // optional; not kept in checkpoints
	DeletionVector          *DeletionVector    `json:"deletionVector,omitempty"`          // the removed logical file's DV
	BaseRowID               *int64             `json:"baseRowId,omitempty"`               // row tracking, copied from the add
	DefaultRowCommitVersion *int64             `json:"defaultRowCommitVersion,omitempty"` // row tracking, copied from the add
}

// DomainMetadata is the domainMetadata action (PROTOCOL.md "Domain Metadata"). Writers must
// preserve domains they do not understand; this package carries them into checkpoints.
type DomainMetadata struct {
	Domain        string `json:"domain"`        // domain name; "delta." prefix is reserved
	Configuration string `json:"configuration"` // opaque configuration string
	Removed       bool   `json:"removed"`       // tombstone
}

// CommitInfo is the commitInfo action written first in every commit (PROTOCOL.md "Commit
// Provenance Information"). OperationParameters and OperationMetrics are string→string maps
// (non-string values broke Spark's DESCRIBE HISTORY). Timestamp is in ms since the epoch.
// ReadVersion is omitted for the commit that creates a table. On read, unknown fields are
// dropped.
type CommitInfo struct {
	Timestamp           int64             `json:"timestamp"`                  // ms since the Unix epoch
	Operation           string            `json:"operation"`                  // e.g. "WRITE", "STREAMING UPDATE"
	OperationParameters map[string]string `json:"operationParameters"`        // string→string
	OperationMetrics    map[string]string `json:"operationMetrics,omitempty"` // string→string, e.g. numFiles
	ReadVersion         *int64            `json:"readVersion,omitempty"`      // version the writer read; absent on create
	IsolationLevel      string            `json:"isolationLevel,omitempty"`   // "WriteSerializable"
	IsBlindAppend       bool              `json:"isBlindAppend"`              // true for pure appends
	EngineInfo          string            `json:"engineInfo,omitempty"`       // "streamkit/<version>"
	TxnID               string            `json:"txnId,omitempty"`            // UUID identifying this commit attempt
	// InCommitTimestamp is the commit's time in ms since the Unix epoch on a table with
	// in-commit timestamps (writer feature inCommitTimestamp): the time travel and history
	// time of the version, in place of its file's modification time. Nil when absent.
	InCommitTimestamp *int64 `json:"inCommitTimestamp,omitempty"`
}

// UnmarshalJSON is lenient: commitInfo is free-form provenance and other writers put
// non-string values in operationParameters; such fields are kept as their JSON text.
func (c *CommitInfo) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	str := func(k string) string {
		var s string
		_ = json.Unmarshal(raw[k], &s)
		return s
	}
	strMap := func(k string) map[string]string {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw[k], &m) != nil || m == nil {
			return nil
		}
		out := make(map[string]string, len(m))
		for key, v := range m {
			var s string
			if json.Unmarshal(v, &s) == nil {
				out[key] = s
			} else {
				out[key] = string(v)
			}
		}
		return out
	}
	*c = CommitInfo{}
	_ = json.Unmarshal(raw["timestamp"], &c.Timestamp)
	c.Operation = str("operation")
	c.OperationParameters = strMap("operationParameters")
	c.OperationMetrics = strMap("operationMetrics")
	if v, ok := raw["readVersion"]; ok {
		var rv int64
		if json.Unmarshal(v, &rv) == nil {
			c.ReadVersion = &rv
		}
	}
	c.IsolationLevel = str("isolationLevel")
	_ = json.Unmarshal(raw["isBlindAppend"], &c.IsBlindAppend)
	c.EngineInfo = str("engineInfo")
	c.TxnID = str("txnId")
	if v, ok := raw["inCommitTimestamp"]; ok {
		var ict int64
		if json.Unmarshal(v, &ict) == nil {
			c.InCommitTimestamp = &ict
		}
	}
	return nil
}

// encodeActions renders actions as a commit file: one JSON object per line, each line
// terminated by '\n'.
func encodeActions(actions []Action) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for i := range actions {
		normalizeAction(&actions[i])
		if err := enc.Encode(&actions[i]); err != nil {
			return nil, fmt.Errorf("encode action: %w", err)
		}
	}
	return b.Bytes(), nil
}

// normalizeAction fills the fields the protocol requires to be present (never JSON null).
func normalizeAction(a *Action) {
	if a.Add != nil && a.Add.PartitionValues == nil {
		a.Add.PartitionValues = map[string]*string{}
	}
	if m := a.MetaData; m != nil {
		if m.PartitionColumns == nil {
			m.PartitionColumns = []string{}
		}
		if m.Configuration == nil {
			m.Configuration = map[string]string{}
		}
		if m.Format.Options == nil {
			m.Format.Options = map[string]string{}
		}
	}
	if c := a.CommitInfo; c != nil && c.OperationParameters == nil {
		c.OperationParameters = map[string]string{}
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func encodeJSONList(l []string) (string, error) {
	b, err := json.Marshal(l)
	return string(b), err
}
