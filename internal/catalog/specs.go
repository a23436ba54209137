package catalog

import (
	"time"

	"github.com/lakepipe/lakepipe/internal/jobs"
)

// ConnectionSpec is a storage connection; the access key is the object's
// secret and is not part of the spec.
type ConnectionSpec struct {
	Type     string `json:"type"` // OSS, COS, S3
	Endpoint string `json:"endpoint"`
	Region   string `json:"region,omitempty"`
	AccessID string `json:"access_id"`
	// RoleARN, when set, is the role the connection assumes (AWS STS
	// AssumeRole) with its access key; STSEndpoint is where ("" : AWS's).
	RoleARN     string    `json:"role_arn,omitempty"`
	ExternalID  string    `json:"external_id,omitempty"`
	STSEndpoint string    `json:"sts_endpoint,omitempty"`
	Comment     string    `json:"comment,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
}

// VolumeSpec is an external volume.
type VolumeSpec struct {
	Location        string    `json:"location"`
	Connection      string    `json:"connection"`
	DirectoryEnable bool      `json:"directory_enable"`
	AutoRefresh     bool      `json:"auto_refresh"`
	Recursive       bool      `json:"recursive"`
	Comment         string    `json:"comment,omitempty"`
	CreatedAt       time.Time `json:"created_at"`
	// RefreshID names the directory snapshot DIRECTORY() reads; 0 before
	// the first refresh.
	RefreshID   uint64    `json:"refresh_id,omitempty"`
	RefreshedAt time.Time `json:"refreshed_at,omitempty"`
}

// ColumnSpec is one column of a table as declared.
type ColumnSpec struct {
	Name    string `json:"name"`
	Type    string `json:"type"`    // as declared: DECIMAL(10,2)
	CHType  string `json:"ch_type"` // as stored: Nullable(Decimal(10, 2))
	Comment string `json:"comment,omitempty"`
}

// TableSpec is a table created through lakepipe. Its rows live in the
// ClickHouse table of the same name in the database named after the schema.
type TableSpec struct {
	Columns     []ColumnSpec      `json:"columns"`
	PartitionBy []string          `json:"partition_by,omitempty"`
	Comment     string            `json:"comment,omitempty"`
	Properties  map[string]string `json:"properties,omitempty"`
	CreatedAt   time.Time         `json:"created_at"`
	// SchemaVersion grows with every column change; streaming-write
	// sessions compare it to detect a schema mismatch.
	SchemaVersion int `json:"schema_version"`
	// PrimaryKey names the key columns of a keyed table (CREATE TABLE …
	// PRIMARY KEY): one row per key, the latest write winning, stored as a
	// ReplacingMergeTree ordered by the key and read with FINAL.
	PrimaryKey []string `json:"primary_key,omitempty"`
}

// Keyed reports whether the table keeps one row per primary key.
func (t TableSpec) Keyed() bool { return len(t.PrimaryKey) > 0 }

// DroppedTableSpec is a dropped table kept for UNDROP; Name in the catalog
// is the trash table's name.
type DroppedTableSpec struct {
	Table     TableSpec `json:"table"`
	Schema    string    `json:"schema"`
	Name      string    `json:"name"`
	DroppedAt time.Time `json:"dropped_at"`
}

// PipeSpec is a pipe. Its state (paused, counters) lives in its workflow.
type PipeSpec struct {
	Kind          jobs.PipeKind     `json:"kind"`
	Properties    map[string]string `json:"properties"`
	CopyStatement string            `json:"copy_statement"`
	Input         string            `json:"input_name"`  // volume, or Kafka topic
	Output        string            `json:"output_name"` // workspace.schema.table
	// KafkaGroup and KafkaBootstrap are a Kafka pipe's group id and
	// brokers (its Input is the topic).
	KafkaGroup     string    `json:"kafka_group_id,omitempty"`
	KafkaBootstrap string    `json:"kafka_bootstrap,omitempty"`
	Comment        string    `json:"comment,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
}

// DynamicTableSpec is a dynamic table; its rows live in the ClickHouse
// table of the same name, replaced whole by each refresh.
type DynamicTableSpec struct {
	Query           string   `json:"query"` // canonical SELECT text
	Interval        string   `json:"interval"`
	IntervalSeconds int      `json:"interval_seconds"`
	VCluster        string   `json:"vcluster,omitempty"`
	Sources         []string `json:"source_tables"`
	// ChangeVersion is the change-log version of its source an
	// incrementally refreshed summary reflects (0: not built yet).
	ChangeVersion uint64 `json:"change_version,omitempty"`
	// StateOf names the tables the state was built from, with their
	// creation times; a refresh that finds them otherwise rebuilds it.
	StateOf   string    `json:"state_of,omitempty"`
	Comment   string    `json:"comment,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// StreamSpec is a table stream: the changes of a table since its offset.
type StreamSpec struct {
	Table           string    `json:"table"` // schema.table
	Mode            string    `json:"mode"`  // STANDARD, APPEND_ONLY
	ShowInitialRows bool      `json:"show_initial_rows,omitempty"`
	Offset          uint64    `json:"offset"` // commit version consumed up to
	Comment         string    `json:"comment,omitempty"`
	CreatedAt       time.Time `json:"created_at"`
	ConsumedAt      time.Time `json:"consumed_at,omitempty"`
	// TableCreatedAt is when the stream's table was created: a table of
	// that name created again since (dropped, then created) is another
	// table, and the stream is stale. Zero for streams made before it
	// was recorded.
	TableCreatedAt time.Time `json:"table_created_at,omitempty"`
}
