// Package loading runs COPY INTO a table or a volume and volume pipes: a
// pipe's listing (incremental after the last handled key where keys arrive
// in order, with a full listing now and then), the selection of its files
// (patterns, temporary files), each file's or each batch's load exactly
// once under commit ids derived from the pipe and the file's ETag, the
// ledger (load_history) that says what was loaded, and the routing of
// event notifications to pipes. Files are read through package fileread;
// loads are registered in the change log through package changes.
//
// The pipe's schedule and turns are the pipe workflow's; this package
// must not import the workflows, the engine or the other loading packages.
package loading
