package engine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/fileread"
	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/internal/kafka"
	"github.com/lakepipe/lakepipe/internal/kafkaload"
	"github.com/lakepipe/lakepipe/internal/loading"
	"github.com/lakepipe/lakepipe/internal/objstore"
	"github.com/lakepipe/lakepipe/internal/query"
	"github.com/lakepipe/lakepipe/internal/sqlast"
	"github.com/lakepipe/lakepipe/schemas"
)

// Check validates a statement without any server: types, property names
// and values, formats and options. It is what `lakepipe sql --check` runs;
// what needs the catalog (does the table exist?) is left to execution.
// Tables of lakepipe's own databases and of system, and functions that
// reach outside the user's tables, are refused as execution refuses them
// (unqualified names are taken to be in schema).
func Check(schema string, stmt sqlast.Statement) error {
	if err := query.Guard(schema, stmt); err != nil {
		return err
	}
	switch s := stmt.(type) {
	case *sqlast.CreateConnection:
		switch s.Kind {
		case "OSS", "COS", "S3":
		default:
			return fmt.Errorf("storage connection %s: TYPE %s is not one of OSS, COS, S3", s.Name, s.Kind)
		}
		m := core.Props(s.Props)
		if m["endpoint"] == "" {
			return fmt.Errorf("storage connection %s: ENDPOINT = '…' is required", s.Name)
		}
		if err := checkRoleARN(s.Kind, catalog.ConnectionSpec{RoleARN: strings.TrimSpace(m["role_arn"]), ExternalID: m["external_id"], STSEndpoint: strings.TrimSpace(m["sts_endpoint"])}); err != nil {
			return fmt.Errorf("storage connection %s: %w", s.Name, err)
		}
	case *sqlast.CreateVolume:
		if _, err := objstore.ParseLocation(s.Location); err != nil {
			return fmt.Errorf("volume %s: %w", s.Name, err)
		}
	case *sqlast.CreateTable:
		for _, c := range s.Columns {
			if _, err := schemas.ClickHouseType(c.Type, c.NotNull); err != nil {
				return fmt.Errorf("column %s: %w", c.Name, err)
			}
		}
		if _, err := primaryKey(s.Name.Name(), s); err != nil {
			return err
		}
		if err := checkTableProps(s.Name.Name(), core.Props(s.Props)); err != nil {
			return err
		}
	case *sqlast.CopyIntoTable:
		return checkCopy(s)
	case *sqlast.CopyIntoVolume:
		switch strings.ToUpper(s.FileFormat) {
		case "CSV", "PARQUET":
		default:
			return fmt.Errorf("COPY INTO VOLUME: FILE_FORMAT = (TYPE = %s) is not supported (CSV or PARQUET)", s.FileFormat)
		}
	case *sqlast.CreatePipe:
		if err := checkPipeProps(s.Props); err != nil {
			return fmt.Errorf("pipe %s: %w", s.Name, err)
		}
		if s.Copy == nil {
			return fmt.Errorf("pipe %s: AS COPY INTO … is required", s.Name)
		}
		kind := jobs.KindVolume
		if s.Copy.Volume == nil {
			kind = jobs.KindKafka
		}
		for _, p := range s.Props {
			if err := alterableFor(kind, strings.ToLower(p.Key)); err != nil {
				return fmt.Errorf("pipe %s: %w", s.Name, err)
			}
		}
		if m := core.Props(s.Props); m["event_queue"] != "" && !strings.EqualFold(m["ingest_mode"], "EVENT_NOTIFICATION") {
			return fmt.Errorf("pipe %s: EVENT_QUEUE goes with INGEST_MODE = 'EVENT_NOTIFICATION'", s.Name)
		}
		return checkCopy(s.Copy)
	case *sqlast.AlterPipe:
		if s.Action == "SET_COPY" {
			return fmt.Errorf("the COPY statement of pipe %s cannot be altered: DROP PIPE and CREATE PIPE again", s.Name)
		}
		if s.Action == "SET" {
			// All are checked before any is applied.
			for _, p := range s.Props {
				switch k := strings.ToLower(p.Key); k {
				case "pipe_execution_paused":
					if _, err := core.ParseBool("PIPE_EXECUTION_PAUSED", p.Value); err != nil {
						return fmt.Errorf("pipe %s: %w", s.Name, err)
					}
				case "comment":
				case "reset_kafka_group_offsets":
					if v := strings.ToLower(strings.TrimSpace(p.Value)); v != "earliest" && v != "latest" {
						if _, err := kafka.ParseResetMillis(p.Value); err != nil {
							return fmt.Errorf("pipe %s: %w", s.Name, err)
						}
					}
				case "ingest_mode", "initial_delay_in_seconds":
					return fmt.Errorf("pipe %s: %s is fixed when the pipe is created: DROP PIPE and CREATE PIPE to change it", s.Name, strings.ToUpper(k))
				default:
					check, ok := pipeProps[k]
					if !ok || !AlterablePipeProps[k] {
						return fmt.Errorf("pipe %s: %s is not a property ALTER PIPE … SET takes (it takes PIPE_EXECUTION_PAUSED, RESET_KAFKA_GROUP_OFFSETS, %s)", s.Name, strings.ToUpper(k), alterableNames())
					}
					if err := check(p.Value); err != nil {
						return fmt.Errorf("pipe %s: %w", s.Name, err)
					}
				}
			}
		}
	case *sqlast.CreateDynamicTable:
		if s.IntervalN < 0 {
			return fmt.Errorf("dynamic table %s: REFRESH INTERVAL must be positive", s.Name.Name())
		}
	}
	return nil
}

func checkCopy(s *sqlast.CopyIntoTable) error {
	if _, err := fileread.CopyOnError(s.Options); err != nil {
		return err
	}
	if s.Volume == nil {
		if s.Query == nil {
			return nil
		}
		_, fc, err := kafkaload.KafkaQuery(s.Query)
		if err != nil {
			return err
		}
		_, err = kafkaload.ParseReadKafka(fc)
		return err
	}
	switch strings.ToUpper(s.Volume.Format) {
	case "CSV", "JSON", "PARQUET":
	default:
		return fmt.Errorf("USING %s: expected CSV, JSON or PARQUET", s.Volume.Format)
	}
	// Paths a person typed are checked before any server is asked.
	for _, f := range s.Volume.Files {
		if err := objstore.CheckPath(f); err != nil {
			return fmt.Errorf("FILES(%s): %w", chsql.QuoteString(f), err)
		}
	}
	if s.Volume.Subdirectory != nil {
		if err := objstore.CheckPath(*s.Volume.Subdirectory); err != nil {
			return fmt.Errorf("SUBDIRECTORY %s: %w", chsql.QuoteString(*s.Volume.Subdirectory), err)
		}
	}
	_, err := fileread.ReadOptions(s.Volume)
	return err
}

// pipeProps are the properties CREATE PIPE accepts, with their checks.
var pipeProps = map[string]func(string) error{
	"virtual_cluster": func(string) error { return nil },
	"ingest_mode": func(v string) error {
		switch strings.ToUpper(v) {
		case "LIST_PURGE", "LIST", "EVENT_NOTIFICATION":
			return nil
		}
		return fmt.Errorf("INGEST_MODE = %q: expected 'LIST_PURGE', 'LIST' or 'EVENT_NOTIFICATION'", v)
	},
	"batch_interval_in_seconds":      positiveInt("BATCH_INTERVAL_IN_SECONDS"),
	"poll_interval_in_seconds":       positiveInt("POLL_INTERVAL_IN_SECONDS"),
	"batch_size_per_kafka_partition": positiveInt("BATCH_SIZE_PER_KAFKA_PARTITION"),
	"max_files_per_batch":            intUpTo("MAX_FILES_PER_BATCH", MaxFilesPerTurn),
	"initial_delay_in_seconds":       positiveInt("INITIAL_DELAY_IN_SECONDS"),
	"comment":                        func(string) error { return nil },
	"dead_letter_table":              kafkaload.CheckDeadLetterTable,
	"ignore_tmp_file": func(v string) error {
		_, err := core.ParseBool("IGNORE_TMP_FILE", v)
		return err
	},
	"copy_job_hint": func(v string) error {
		_, err := loading.ParseCopyJobHint(v)
		return err
	},
	"event_queue": func(v string) error {
		_, err := loading.ParseEventQueue(v)
		return err
	},
}

// AlterablePipeProps are the properties ALTER PIPE … SET changes on a
// running pipe (besides PIPE_EXECUTION_PAUSED), from its next turn.
var AlterablePipeProps = map[string]bool{
	"poll_interval_in_seconds": true, "batch_interval_in_seconds": true, "max_files_per_batch": true,
	"batch_size_per_kafka_partition": true, "ignore_tmp_file": true, "virtual_cluster": true, "comment": true,
	"dead_letter_table": true, "copy_job_hint": true, "event_queue": true,
}

func alterableNames() string {
	names := make([]string, 0, len(AlterablePipeProps))
	for k := range AlterablePipeProps {
		names = append(names, strings.ToUpper(k))
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// knownPipeProps lists pipeProps' names for error messages.
func knownPipeProps() string {
	names := make([]string, 0, len(pipeProps))
	for k := range pipeProps {
		names = append(names, strings.ToUpper(k))
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// MaxFilesPerTurn bounds MAX_FILES_PER_BATCH: a turn's file list travels
// in its activities' inputs and results (~130 bytes a file), which
// Temporal keeps under 2 MB.
const MaxFilesPerTurn = 10000

// intUpTo is positiveInt with an upper bound.
func intUpTo(name string, limit int) func(string) error {
	positive := positiveInt(name)
	return func(v string) error {
		if err := positive(v); err != nil {
			return err
		}
		if n, _ := strconv.Atoi(strings.TrimSpace(v)); n > limit {
			return fmt.Errorf("%s = %s: at most %d (a turn's file list travels in Temporal's history)", name, strings.TrimSpace(v), limit)
		}
		return nil
	}
}

func positiveInt(name string) func(string) error {
	return func(v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n <= 0 {
			return fmt.Errorf("%s = %q: expected a positive whole number", name, v)
		}
		return nil
	}
}

func checkPipeProps(ps []sqlast.Property) error {
	for _, p := range ps {
		chk, ok := pipeProps[strings.ToLower(p.Key)]
		if !ok {
			return fmt.Errorf("unknown property %s (known: %s)", strings.ToUpper(p.Key), knownPipeProps())
		}
		if err := chk(p.Value); err != nil {
			return err
		}
	}
	return nil
}
