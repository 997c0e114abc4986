package delta

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/google/uuid"
)

// ErrUnsupportedProtocol is wrapped by every refusal to read or write a table whose protocol
// versions, table features or properties this package does not implement. The message names
// the version, feature or property.
var ErrUnsupportedProtocol = errors.New("unsupported Delta protocol")

// Table feature names (PROTOCOL.md "Valid Feature Names in Table Features").
const (
	FeatureAppendOnly          = "appendOnly"
	FeatureInvariants          = "invariants"
	FeatureCheckConstraints    = "checkConstraints"
	FeatureChangeDataFeed      = "changeDataFeed"
	FeatureGeneratedColumns    = "generatedColumns"
	FeatureColumnMapping       = "columnMapping"
	FeatureIdentityColumns     = "identityColumns"
	FeatureDeletionVectors     = "deletionVectors"
	FeatureTimestampNTZ        = "timestampNtz"
	FeatureDomainMetadata      = "domainMetadata"
	FeatureVacuumProtocolCheck = "vacuumProtocolCheck"
	FeatureAllowColumnDefaults = "allowColumnDefaults"
	FeatureV2Checkpoint        = "v2Checkpoint"
)

// writerFeaturesOf returns the writer features a protocol enables: the listed ones at writer
// version 7, the implied legacy set below it (PROTOCOL.md "Writer Version Requirements").
func writerFeaturesOf(p *Protocol) []string {
	if p.MinWriterVersion >= 7 {
		return p.WriterFeatures
	}
	var fs []string
	if p.MinWriterVersion >= 2 {
		fs = append(fs, FeatureAppendOnly, FeatureInvariants)
	}
	if p.MinWriterVersion >= 3 {
		fs = append(fs, FeatureCheckConstraints)
	}
	if p.MinWriterVersion >= 4 {
		fs = append(fs, FeatureChangeDataFeed, FeatureGeneratedColumns)
	}
	if p.MinWriterVersion >= 5 {
		fs = append(fs, FeatureColumnMapping)
	}
	if p.MinWriterVersion >= 6 {
		fs = append(fs, FeatureIdentityColumns)
	}
	return fs
}

func unsupported(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrUnsupportedProtocol}, args...)...)
}

// checkRead verifies that this package can interpret the log and data of a table with
// protocol p and metadata m (DELTA.md "Reader safety"): reader version 1 or 2; 3 only with
// reader features timestampNtz, deletionVectors, vacuumProtocolCheck, columnMapping,
// v2Checkpoint or typeWidening(-preview) whose delta.typeChanges are all supported widenings
// ([WideningSupported]); column mapping in mode none, name or id, only where the protocol
// supports it ([checkMappingMode]); provider "parquet".
func checkRead(p *Protocol, m *Metadata) error {
	if m.Format.Provider != "" && !strings.EqualFold(m.Format.Provider, "parquet") {
		return unsupported("data file format %q (only parquet)", m.Format.Provider)
	}
	if err := checkMappingMode(p, m); err != nil {
		return err
	}
	switch p.MinReaderVersion {
	case 1, 2:
	case 3:
		for _, f := range p.ReaderFeatures {
			switch f {
			case FeatureTimestampNTZ, FeatureDeletionVectors, FeatureVacuumProtocolCheck, FeatureColumnMapping:
			case FeatureV2Checkpoint: // UUID-named checkpoints and sidecars are read (checkpointread.go)
			case FeatureTypeWidening, FeatureTypeWideningPreview:
				schema, err := m.Schema()
				if err != nil {
					return err
				}
				if err := checkTypeChanges(schema, ""); err != nil {
					return err
				}
			default:
				return unsupported("reader feature %q", f)
			}
		}
	default:
		return unsupported("reader version %d (supported: 1 to 3)", p.MinReaderVersion)
	}
	return nil
}

// checkWrite verifies that this package can append to or overwrite a table with protocol p and
// metadata m without breaking a feature (PROTOCOL.md "Table Features": writers must implement
// every listed writer feature). Features whose obligations never apply to a plain append are
// accepted; those that need something this package does not do are refused only when the
// table actually uses them (e.g. invariants only if a column carries delta.invariants).
func checkWrite(p *Protocol, m *Metadata) error {
	if err := checkRead(p, m); err != nil {
		return err
	}
	if p.MinWriterVersion < 1 || p.MinWriterVersion > 7 {
		return unsupported("writer version %d (supported: 1 to 7)", p.MinWriterVersion)
	}
	schema, err := m.Schema()
	if err != nil {
		return err
	}
	for _, f := range writerFeaturesOf(p) {
		switch f {
		case FeatureAppendOnly, FeatureChangeDataFeed, FeatureTimestampNTZ, FeatureDomainMetadata,
			FeatureVacuumProtocolCheck, FeatureDeletionVectors, FeatureTypeWidening, FeatureTypeWideningPreview,
			FeatureClustering:
			// typeWidening: appends write the current types and keep delta.typeChanges;
			// clustering: checkClustering (statistics of the clustering columns);
			// appendOnly is enforced in Commit; appends and full overwrites need no CDC files;
			// domains are preserved in checkpoints; vacuumProtocolCheck asks VACUUM to pass
			// this write check first, which `streamkit delta vacuum` does; removes carry the DV.
		case FeatureV2Checkpoint:
			// checkpoints follow delta.checkpointPolicy (checkpoint.go); never multi-part.
		case FeatureInvariants:
			if col := anyFieldMetadata(schema, "delta.invariants", ""); col != "" {
				return unsupported("column %s has a delta.invariants constraint (writer feature invariants), which streamkit cannot evaluate", col)
			}
		case FeatureCheckConstraints:
			for k := range m.Configuration {
				if strings.HasPrefix(k, "delta.constraints.") {
					return unsupported("table has CHECK constraint %s (writer feature checkConstraints), which streamkit cannot evaluate", k)
				}
			}
		case FeatureGeneratedColumns:
			if col := anyFieldMetadata(schema, "delta.generationExpression", ""); col != "" {
				return unsupported("column %s is a generated column (writer feature generatedColumns)", col)
			}
		case FeatureIdentityColumns:
			if col := anyFieldMetadata(schema, "delta.identity.", ""); col != "" {
				return unsupported("column %s is an identity column (writer feature identityColumns)", col)
			}
		case FeatureAllowColumnDefaults:
			if col := anyFieldMetadata(schema, "CURRENT_DEFAULT", ""); col != "" {
				return unsupported("column %s has a default value (writer feature allowColumnDefaults)", col)
			}
		case FeatureColumnMapping:
			// Data files are written with physical names and field ids, partition values
			// and statistics keyed by physical names, new columns get new ids (EvolveMetadata).
		case FeatureIcebergCompatV2:
			if err := checkIcebergCompatV2(p, m, schema); err != nil {
				return err
			}
		default:
			return unsupported("writer feature %q", f)
		}
	}
	if p.MinWriterVersion >= 7 && p.MinReaderVersion >= 3 {
		for _, f := range p.ReaderFeatures {
			if !slices.Contains(p.WriterFeatures, f) {
				return unsupported("reader feature %q missing from writerFeatures", f)
			}
		}
	}
	if hasType(schema, TypeTimestampNTZ) && !slices.Contains(writerFeaturesOf(p), FeatureTimestampNTZ) {
		return unsupported("table has a timestamp_ntz column but not the timestampNtz feature")
	}
	if v := m.Configuration["delta.checkpointPolicy"]; strings.EqualFold(v, "v2") && !slices.Contains(writerFeaturesOf(p), FeatureV2Checkpoint) {
		return unsupported("table property delta.checkpointPolicy=%s needs feature v2Checkpoint", v)
	}
	return checkProperties(withoutSupportedProperties(p, m.Configuration))
}

// featureProperties are table properties that turn on a feature this package cannot honour.
var featureProperties = []struct{ key, bad, feature string }{
	{"delta.enableDeletionVectors", "true", "deletionVectors (enabled for new writes)"},
	{"delta.enableRowTracking", "true", "rowTracking"},
	{"delta.enableInCommitTimestamps", "true", "inCommitTimestamp"},
	{"delta.enableTypeWidening", "true", "typeWidening"},
	{"delta.enableIcebergCompatV1", "true", "icebergCompatV1"},
	{"delta.enableIcebergCompatV2", "true", "icebergCompatV2"},
	{"delta.enableVariantShredding", "true", "variantShredding"},
}

func checkProperties(conf map[string]string) error {
	for _, fp := range featureProperties {
		if v, ok := conf[fp.key]; ok && strings.EqualFold(v, fp.bad) {
			if fp.key == "delta.enableDeletionVectors" {
				continue // only asks writers to produce DVs on delete/update; appends need none
			}
			return unsupported("table property %s=%s needs feature %s", fp.key, v, fp.feature)
		}
	}
	return nil
}

// CreateOptions describe a new table.
type CreateOptions struct {
	// PartitionColumns are top-level columns whose values become Hive-style directories
	// (col=value/); they are not stored in data files. Types allowed: string, integers,
	// boolean, date, timestamp(_ntz), decimal, float, double. Default: none.
	PartitionColumns []string
	// Configuration holds table properties (string→string), e.g.
	// "delta.checkpointInterval": "10", validated by [ValidateProperties]. Properties that need
	// unsupported features are refused.
	Configuration map[string]string
	// AllowArbitraryProperties accepts delta.* keys that Delta does not define (as Spark's
	// spark.databricks.delta.allowArbitraryProperties.enabled); default: refused.
	AllowArbitraryProperties bool
	// Name and Description are optional user-facing labels (metaData.name/description).
	Name, Description string
	// ID is the table id (metaData.id); default: a random UUID.
	ID string
	// Now is the creation time (metaData.createdTime); default: time.Now().
	Now time.Time
}

// NewTableMetadata builds the protocol and metaData actions of a new table whose columns are
// described by the Arrow schema sc (see [FromArrowSchema] for the type mapping). The protocol
// is {minReaderVersion 1, minWriterVersion 2}, or reader 3 / writer 7 with feature
// timestampNtz in both lists when a (nested) column is a timestamp without time zone
// (PROTOCOL.md "Timestamp without timezone") and feature v2Checkpoint in both lists when
// delta.checkpointPolicy is v2 (PROTOCOL.md "V2 Checkpoint Table Feature"); a writer-7 table
// also lists appendOnly and changeDataFeed when the matching properties are "true". Errors name the offending column
// or property.
func NewTableMetadata(sc *arrow.Schema, opts CreateOptions) (*Protocol, *Metadata, error) {
	schema, err := FromArrowSchemaFor(sc, ColumnMappingMode(opts.Configuration[ColumnMappingModeKey]))
	if err != nil {
		return nil, nil, fmt.Errorf("create table: %w", err)
	}
	return newTableMetadata(schema, opts)
}

func newTableMetadata(schema *StructType, opts CreateOptions) (*Protocol, *Metadata, error) {
	conf, err := ValidateProperties(opts.Configuration, opts.AllowArbitraryProperties)
	if err != nil {
		return nil, nil, fmt.Errorf("create table: %w", err)
	}
	if err := checkProperties(conf); err != nil {
		return nil, nil, fmt.Errorf("create table: %w", err)
	}
	seen := map[string]bool{}
	for _, pc := range opts.PartitionColumns {
		f := schema.Field(pc)
		if f == nil {
			return nil, nil, fmt.Errorf("create table: partition column %q is not a column of the input", pc)
		}
		if seen[pc] {
			return nil, nil, fmt.Errorf("create table: partition column %q listed twice", pc)
		}
		seen[pc] = true
		if !partitionable(f.Type) {
			return nil, nil, fmt.Errorf("create table: partition column %q has type %s; partition by a string, integer, boolean, date, timestamp or decimal column", pc, f.Type)
		}
	}
	if len(seen) == len(schema.Fields) {
		return nil, nil, fmt.Errorf("create table: every column is a partition column; at least one column must be stored in data files")
	}
	p := &Protocol{MinReaderVersion: 1, MinWriterVersion: 2}
	mapped := ColumnMappingMode(conf[ColumnMappingModeKey]).Mapped()
	if mapped {
		// Every column gets an id and a physical name; reader 2 / writer 5 is the legacy
		// protocol of column mapping (PROTOCOL.md "Column Mapping").
		schema, conf = assignColumnMapping(schema, conf)
		p = &Protocol{MinReaderVersion: 2, MinWriterVersion: 5}
	}
	ntz, v2 := hasType(schema, TypeTimestampNTZ), strings.EqualFold(conf["delta.checkpointPolicy"], "v2")
	if ntz || v2 {
		p = &Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{}, WriterFeatures: []string{}}
		if ntz {
			p.ReaderFeatures = append(p.ReaderFeatures, FeatureTimestampNTZ)
			p.WriterFeatures = append(p.WriterFeatures, FeatureTimestampNTZ)
		}
		if v2 {
			p.ReaderFeatures = append(p.ReaderFeatures, FeatureV2Checkpoint)
			p.WriterFeatures = append(p.WriterFeatures, FeatureV2Checkpoint)
		}
		if mapped {
			p.ReaderFeatures = append(p.ReaderFeatures, FeatureColumnMapping)
			p.WriterFeatures = append(p.WriterFeatures, FeatureColumnMapping)
		}
		sort.Strings(p.ReaderFeatures)
		if strings.EqualFold(conf["delta.appendOnly"], "true") {
			p.WriterFeatures = append(p.WriterFeatures, FeatureAppendOnly)
		}
		if strings.EqualFold(conf["delta.enableChangeDataFeed"], "true") {
			p.WriterFeatures = append(p.WriterFeatures, FeatureChangeDataFeed)
		}
		sort.Strings(p.WriterFeatures)
	} else if strings.EqualFold(conf["delta.enableChangeDataFeed"], "true") {
		p.MinWriterVersion = max(p.MinWriterVersion, 4)
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	ms := now.UnixMilli()
	id := opts.ID
	if id == "" {
		id = uuid.NewString()
	}
	m := &Metadata{
		ID:               id,
		Format:           Format{Provider: "parquet", Options: map[string]string{}},
		SchemaString:     schema.JSON(),
		PartitionColumns: append([]string{}, opts.PartitionColumns...),
		Configuration:    conf,
		CreatedTime:      &ms,
	}
	if opts.Name != "" {
		m.Name = &opts.Name
	}
	if opts.Description != "" {
		m.Description = &opts.Description
	}
	return p, m, nil
}

func partitionable(t DataType) bool {
	switch t := t.(type) {
	case PrimitiveType:
		switch t {
		case TypeString, TypeLong, TypeInteger, TypeShort, TypeByte, TypeBoolean, TypeDate,
			TypeTimestamp, TypeTimestampNTZ, TypeFloat, TypeDouble:
			return true
		}
	case DecimalType:
		return true
	}
	return false
}
