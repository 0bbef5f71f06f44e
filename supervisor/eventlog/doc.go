// Package eventlog is a bounded, ordered log of events read by offset: the
// event log of a session sandbox (every event gets the next offset: sandbox
// ready, exec started, output chunks, exec ended, file written or removed,
// expiring, ended), after sandbox-agent's sessions, whose events are read
// by offset or followed live.
//
// Offsets start at 0 and increase by one per entry, without gaps. The log
// keeps the newest entries within two bounds, Config.MaxEntries entries and
// Config.MaxBytes bytes of payload (as the caller measures each entry):
// appending past either drops the oldest entries. The newest entry is
// always kept, so an entry larger than MaxBytes is held alone. Memory is
// therefore at most MaxBytes of payload plus MaxEntries entries' bookkeeping
// (an Entry: offset, time, the value and its size).
//
// Readers never hold anything of the log's: Read returns a page from an
// offset; Subscribe returns an iterator that yields the entries from an
// offset, then follows new ones live until the log is closed. A
// subscription is a cursor, not a queue: it reads the log's own entries
// under its lock, a page at a time, so the writer never waits for a
// subscriber and a subscriber costs no memory beyond the page it is
// delivering. A subscriber that falls so far behind that the entry it
// needs next was dropped is cut off: its iterator yields a *DroppedError
// naming the first offset still held, and ends. Asking for a dropped
// offset in Read or Subscribe gets the same error, except offset 0: it
// names the start of the log, whatever it still holds, and reads from the
// first entry held (whose offset says how many were dropped before it).
// Nothing is ever skipped silently.
//
// Everything here is safe for concurrent use and knows nothing of gRPC;
// errors.go lists the errors callers map.
package eventlog
