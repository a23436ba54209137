package workflows

// The states and kinds that activities report and workflows act on, each
// defined once. They travel in Temporal histories as their strings, so a
// value here never changes once released.

// FileStatus is what became of one file, as load_history shows it.
type FileStatus string

const (
	FileLoaded          FileStatus = "LOADED"
	FilePartiallyLoaded FileStatus = "PARTIALLY_LOADED"
	FileFailed          FileStatus = "FAILED"
	// FileSkipped: the file was not loaded this turn and is not recorded
	// (gone since the listing, or loaded already).
	FileSkipped FileStatus = "SKIPPED"
)

// Loaded reports whether the file's rows are in the table.
func (s FileStatus) Loaded() bool { return s == FileLoaded || s == FilePartiallyLoaded }

// RefreshState is how a dynamic table's refresh ended, as SHOW DYNAMIC
// TABLE REFRESH HISTORY shows it.
type RefreshState string

const (
	RefreshSucceeded RefreshState = "SUCCEED"
	RefreshFailed    RefreshState = "FAILED"
)

// RefreshMode is how a refresh computed the dynamic table.
type RefreshMode string

const (
	RefreshIncremental RefreshMode = "INCREMENTAL"
	RefreshFull        RefreshMode = "FULL"
)
