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
	CommitInfo     *CommitInfo     `json:"commitInfo,omitempty"`
	Protocol       *Protocol       `json:"protocol,omitempty"`
	MetaData       *Metadata       `json:"metaData,omitempty"`
	Txn            *Txn            `json:"txn,omitempty"`
	Add            *Add            `json:"add,omitempty"`
	Remove         *Remove         `json:"remove,omitempty"`
	DomainMetadata *DomainMetadata `json:"domainMetadata,omitempty"`
}

// Protocol is the protocol action (PROTOCOL.md "Protocol Evolution"). ReaderFeatures is
// written only when MinReaderVersion is 3 and WriterFeatures only when MinWriterVersion is 7
// (a feature list at a lower version breaks kernel-based readers); at those versions the lists
// are always written, possibly empty.
type Protocol struct {
	MinReaderVersion int      `json:"minReaderVersion"`
	MinWriterVersion int      `json:"minWriterVersion"`
	ReaderFeatures   []string `json:"readerFeatures,omitempty"`
	WriterFeatures   []string `json:"writerFeatures,omitempty"`
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
	Provider string            `json:"provider"`
	Options  map[string]string `json:"options"`
}

// Metadata is the metaData action (PROTOCOL.md "Change Metadata"). SchemaString holds the
// table schema as Delta JSON ([StructType]); Configuration holds table properties such as
// delta.checkpointInterval; CreatedTime is in milliseconds since the Unix epoch.
type Metadata struct {
	ID               string            `json:"id"`
	Name             *string           `json:"name,omitempty"`
	Description      *string           `json:"description,omitempty"`
	Format           Format            `json:"format"`
	SchemaString     string            `json:"schemaString"`
	PartitionColumns []string          `json:"partitionColumns"`
	Configuration    map[string]string `json:"configuration"`
	CreatedTime      *int64            `json:"createdTime,omitempty"`
}

// Schema parses SchemaString.
func (m *Metadata) Schema() (*StructType, error) {
	return ParseSchema(m.SchemaString)
}

// Txn is the txn (SetTransaction) action (PROTOCOL.md "Transaction Identifiers"): the
// application-specific Version (e.g. a streamkit epoch) committed by application AppID.
// LastUpdated is in milliseconds since the Unix epoch.
type Txn struct {
	AppID       string `json:"appId"`
	Version     int64  `json:"version"`
	LastUpdated *int64 `json:"lastUpdated,omitempty"`
}

// DeletionVector is a deletion vector descriptor (PROTOCOL.md "Deletion Vectors"). This
// package never writes deletion vectors; it carries them through from other writers.
type DeletionVector struct {
	StorageType    string `json:"storageType"`
	PathOrInlineDv string `json:"pathOrInlineDv"`
	Offset         *int32 `json:"offset,omitempty"`
	SizeInBytes    int32  `json:"sizeInBytes"`
	Cardinality    int64  `json:"cardinality"`
	MaxRowIndex    *int64 `json:"maxRowIndex,omitempty"`
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
	Path                    string             `json:"path"`
	PartitionValues         map[string]*string `json:"partitionValues"`
	Size                    int64              `json:"size"`
	ModificationTime        int64              `json:"modificationTime"`
	DataChange              bool               `json:"dataChange"`
	Stats                   string             `json:"stats,omitempty"`
	Tags                    map[string]string  `json:"tags,omitempty"`
	DeletionVector          *DeletionVector    `json:"deletionVector,omitempty"`
	BaseRowID               *int64             `json:"baseRowId,omitempty"`
	DefaultRowCommitVersion *int64             `json:"defaultRowCommitVersion,omitempty"`
	ClusteringProvider      *string            `json:"clusteringProvider,omitempty"`
}

// Remove is the remove action. Path is byte-identical to the removed add's path;
// DeletionTimestamp is in ms since the epoch.
type Remove struct {
	Path                    string             `json:"path"`
	DeletionTimestamp       *int64             `json:"deletionTimestamp,omitempty"`
	DataChange              bool               `json:"dataChange"`
	ExtendedFileMetadata    *bool              `json:"extendedFileMetadata,omitempty"`
	PartitionValues         map[string]*string `json:"partitionValues,omitempty"`
	Size                    *int64             `json:"size,omitempty"`
	Stats                   string             `json:"stats,omitempty"`
	Tags                    map[string]string  `json:"tags,omitempty"`
	DeletionVector          *DeletionVector    `json:"deletionVector,omitempty"`
	BaseRowID               *int64             `json:"baseRowId,omitempty"`
	DefaultRowCommitVersion *int64             `json:"defaultRowCommitVersion,omitempty"`
}

// DomainMetadata is the domainMetadata action (PROTOCOL.md "Domain Metadata"). Writers must
// preserve domains they do not understand; this package carries them into checkpoints.
type DomainMetadata struct {
	Domain        string `json:"domain"`
	Configuration string `json:"configuration"`
	Removed       bool   `json:"removed"`
}

// CommitInfo is the commitInfo action written first in every commit (PROTOCOL.md "Commit
// Provenance Information"). OperationParameters and OperationMetrics are string→string maps
// (non-string values broke Spark's DESCRIBE HISTORY). Timestamp is in ms since the epoch.
// ReadVersion is omitted for the commit that creates a table. On read, unknown fields are
// dropped.
type CommitInfo struct {
	Timestamp           int64             `json:"timestamp"`
	Operation           string            `json:"operation"`
	OperationParameters map[string]string `json:"operationParameters"`
	OperationMetrics    map[string]string `json:"operationMetrics,omitempty"`
	ReadVersion         *int64            `json:"readVersion,omitempty"`
	IsolationLevel      string            `json:"isolationLevel,omitempty"`
	IsBlindAppend       bool              `json:"isBlindAppend"`
	EngineInfo          string            `json:"engineInfo,omitempty"`
	TxnID               string            `json:"txnId,omitempty"`
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
