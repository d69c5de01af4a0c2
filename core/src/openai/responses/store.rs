//! Stored responses, in SQLite: one row per response holding what `retrieve` gives, its input
//! items and the conversation up to and including its output. A row holds the whole
//! conversation rather than a link to the previous response, so deleting a response never
//! breaks the ones that continued it, and continuing one is one read; the conversation is
//! bounded by the model's context, since a turn that does not fit fails and is not stored.
//!
//! The database opens on first use, in WAL mode with a busy timeout, so several processes can
//! share one file (each write is one short transaction); `:memory:` keeps it in the process.
//! Rows older than `max_age_days` go, and the oldest go while the rows' total size is over
//! `max_megabytes` (both checked when a response is stored).

use crate::config::ResponsesConfig;
use crate::error::{Error, Result};
use crate::openai::types::ChatMessage;
use crate::predict::unix_now;
use rusqlite::{params, Connection, OptionalExtension};
use serde_json::Value as Json;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// A stored response.
pub(super) struct Stored {
    pub response: Json,
    pub input: Vec<Json>,
    /// The conversation up to and including its output (without its `instructions`, which a
    /// next turn does not inherit).
    pub conversation: Vec<ChatMessage>,
}

/// How long a writer waits for another process's write to finish before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The store: its place, its bounds, and the connection once opened.
pub(super) struct Store {
    path: PathBuf,
    max_age_seconds: i64,
    max_bytes: i64,
    /// Opened on first use; a failure to open is tried again on the next call (a volume
    /// mounted late, a directory made afterwards).
    connection: Mutex<Option<Connection>>,
}

impl Store {
    pub fn new(config: &ResponsesConfig) -> Self {
        Store {
            path: config.store_path(),
            max_age_seconds: i64::from(config.max_age_days) * 86_400,
            max_bytes: i64::try_from(config.max_megabytes)
                .unwrap_or(i64::MAX / (1 << 20))
                .saturating_mul(1 << 20),
            connection: Mutex::new(None),
        }
    }

    /// Runs `work` on the open connection (opening it if it is not yet).
    fn with<T>(&self, work: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T> {
        let mut connection = self
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if connection.is_none() {
            *connection = Some(open(&self.path).map_err(|e| {
                Error::internal(format!(
                    "Cannot open the responses store {}: {e} (set `responses.store` in the \
                     config, or INGLE_RESPONSES_STORE, to another file or to :memory:)",
                    self.path.display()
                ))
            })?);
        }
        let Some(connection) = connection.as_ref() else {
            return Err(Error::internal("The responses store is not open"));
        };
        work(connection).map_err(|e| {
            Error::internal(format!(
                "The responses store {} failed: {e}",
                self.path.display()
            ))
        })
    }

    /// Opens the database if it is not yet open.
    pub fn open(&self) -> Result<()> {
        self.with(|_| Ok(()))
    }

    pub fn get(&self, id: &str) -> Result<Option<Stored>> {
        let row = self.with(|db| {
            db.prepare_cached(
                "SELECT response, input, conversation FROM responses
                 WHERE id = ?1 AND created_at >= ?2",
            )?
            .query_row(params![id, self.oldest_kept()], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, String>(2)?,
                ))
            })
            .optional()
        })?;
        let Some((response, input, conversation)) = row else {
            return Ok(None);
        };
        let damaged = |e: serde_json::Error| {
            Error::internal(format!(
                "The stored response '{}' in {} is damaged: {e}",
                crate::error::shown(id),
                self.path.display()
            ))
        };
        Ok(Some(Stored {
            response: serde_json::from_str(&response).map_err(damaged)?,
            input: serde_json::from_str(&input).map_err(damaged)?,
            conversation: serde_json::from_str(&conversation).map_err(damaged)?,
        }))
    }

    /// Stores a response, then forgets what is over the bounds.
    pub fn put(&self, id: &str, stored: &Stored) -> Result<()> {
        let texts = (
            serde_json::to_string(&stored.response),
            serde_json::to_string(&stored.input),
            serde_json::to_string(&stored.conversation),
        );
        let (Ok(response), Ok(input), Ok(conversation)) = texts else {
            return Err(Error::internal("A response could not be written as JSON"));
        };
        let bytes = (response.len() + input.len() + conversation.len()) as i64;
        let created_at = stored.response["created_at"]
            .as_i64()
            .unwrap_or_else(unix_now);
        self.with(|db| {
            // One transaction: another process sees the new row and the pruning together.
            // IMMEDIATE takes the write lock first (waiting in the busy handler): a deferred
            // one that read first could not upgrade after another process's write.
            let db = rusqlite::Transaction::new_unchecked(
                db,
                rusqlite::TransactionBehavior::Immediate,
            )?;
            db.prepare_cached(
                "INSERT OR REPLACE INTO responses (id, created_at, bytes, response, input, conversation)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![id, created_at, bytes, response, input, conversation])?;
            db.prepare_cached("DELETE FROM responses WHERE created_at < ?1")?
                .execute(params![self.oldest_kept()])?;
            // The oldest stored rows past the size bound: a running total, newest first (rowid
            // is the order of storing). The row just stored stays, even alone over the bound.
            db.prepare_cached(
                "DELETE FROM responses WHERE id != ?2 AND rowid IN (
                   SELECT rowid FROM (
                     SELECT rowid, SUM(bytes) OVER (ORDER BY rowid DESC) AS total
                     FROM responses)
                   WHERE total > ?1)",
            )?
            .execute(params![self.max_bytes, id])?;
            db.commit()
        })
    }

    /// Whether a response was there to delete.
    pub fn delete(&self, id: &str) -> Result<bool> {
        self.with(|db| {
            Ok(db
                .prepare_cached("DELETE FROM responses WHERE id = ?1")?
                .execute(params![id])?
                > 0)
        })
    }

    /// The oldest `created_at` still kept.
    fn oldest_kept(&self) -> i64 {
        unix_now().saturating_sub(self.max_age_seconds)
    }
}

/// Opens the database, trying again while another process holds it: SQLite answers "database
/// is locked" at once, without its busy handler, to a connection that turns a file into WAL or
/// creates the table while another does the same (two servers' first requests on a new file).
fn open(path: &std::path::Path) -> rusqlite::Result<Connection> {
    let started = std::time::Instant::now();
    loop {
        match open_once(path) {
            Err(rusqlite::Error::SqliteFailure(error, _))
                if matches!(
                    error.code,
                    rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                ) && started.elapsed() < BUSY_TIMEOUT =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            opened => return opened,
        }
    }
}

fn open_once(path: &std::path::Path) -> rusqlite::Result<Connection> {
    let connection = if path.as_os_str() == ":memory:" {
        Connection::open_in_memory()?
    } else {
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            // An error here shows again, better worded, when the file cannot open.
            let _ = std::fs::create_dir_all(dir);
        }
        Connection::open(path)?
    };
    connection.busy_timeout(BUSY_TIMEOUT)?;
    // WAL: readers do not wait for a writer. With synchronous NORMAL a crash of the process
    // loses nothing committed, and a power cut at most the last commits, never the file's
    // integrity. WAL needs the processes on one machine and a local file system (SQLite's
    // shared memory), not a network one.
    connection.pragma_update(None, "journal_mode", "WAL")?;
    connection.pragma_update(None, "synchronous", "NORMAL")?;
    connection.execute_batch(
        "CREATE TABLE IF NOT EXISTS responses (
           id TEXT PRIMARY KEY,
           created_at INTEGER NOT NULL,
           bytes INTEGER NOT NULL,
           response TEXT NOT NULL,
           input TEXT NOT NULL,
           conversation TEXT NOT NULL
         );
         CREATE INDEX IF NOT EXISTS responses_by_age ON responses (created_at);",
    )?;
    Ok(connection)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn store(max_age_days: u32, max_megabytes: u64) -> Store {
        Store::new(&ResponsesConfig {
            store: Some(PathBuf::from(":memory:")),
            max_age_days,
            max_megabytes,
        })
    }

    fn response(created_at: i64, input_bytes: usize) -> Stored {
        Stored {
            response: json!({"id": "x", "created_at": created_at}),
            input: vec![json!({"type": "message", "content": "a".repeat(input_bytes)})],
            conversation: vec![ChatMessage::user("Hi")],
        }
    }

    #[test]
    fn responses_older_than_the_age_bound_are_forgotten() {
        let store = store(30, 1024);
        let now = unix_now();
        store.put("old", &response(now - 31 * 86_400, 10)).unwrap();
        store
            .put("recent", &response(now - 29 * 86_400, 10))
            .unwrap();
        assert!(store.get("old").unwrap().is_none());
        let rows: i64 = store
            .with(|db| db.query_row("SELECT COUNT(*) FROM responses", [], |row| row.get(0)))
            .unwrap();
        assert_eq!(rows, 1, "the old row is deleted, not only hidden");
        let recent = store.get("recent").unwrap().unwrap();
        assert_eq!(recent.conversation, vec![ChatMessage::user("Hi")]);
    }

    #[test]
    fn the_oldest_go_while_the_store_is_over_its_size() {
        let store = store(30, 1);
        let now = unix_now();
        for (i, id) in ["a", "b", "c", "d"].iter().enumerate() {
            store.put(id, &response(now + i as i64, 400_000)).unwrap();
        }
        // 1 MiB holds two of these.
        let kept: Vec<bool> = ["a", "b", "c", "d"]
            .iter()
            .map(|id| store.get(id).unwrap().is_some())
            .collect();
        assert_eq!(kept, [false, false, true, true]);
        assert!(store.delete("c").unwrap());
        assert!(!store.delete("c").unwrap());
        // One response over the bound alone is kept (the others go).
        store.put("big", &response(now, 1_500_000)).unwrap();
        assert!(store.get("big").unwrap().is_some());
        assert!(store.get("d").unwrap().is_none());
    }

    #[test]
    fn a_store_that_cannot_open_is_tried_again() {
        let dir = std::env::temp_dir().join(format!("ingle-store-retry-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::write(&dir, "a file where the directory will be").unwrap();
        let store = Store::new(&ResponsesConfig {
            store: Some(dir.join("responses.sqlite3")),
            ..ResponsesConfig::default()
        });
        assert!(store.open().is_err());
        std::fs::remove_file(&dir).unwrap();
        store.open().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn stores_opening_one_new_file_at_once_all_open_and_write() {
        // Two `ingle serve` processes given one new file open it together on their first
        // requests: each connection here stands for one process (SQLite locks per file).
        for round in 0..20 {
            let dir = std::env::temp_dir()
                .join(format!("ingle-store-race-{}-{round}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            let path = dir.join("shared.sqlite3");
            let barrier = std::sync::Barrier::new(4);
            std::thread::scope(|scope| {
                for writer in 0..4 {
                    let (path, barrier) = (&path, &barrier);
                    scope.spawn(move || {
                        let store = Store::new(&ResponsesConfig {
                            store: Some(path.clone()),
                            ..ResponsesConfig::default()
                        });
                        barrier.wait();
                        store.open().unwrap();
                        let id = format!("r{writer}");
                        store.put(&id, &response(unix_now(), 10)).unwrap();
                        assert!(store.get(&id).unwrap().is_some());
                    });
                }
            });
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }

    #[test]
    fn a_damaged_row_is_an_error_naming_the_response() {
        let store = store(30, 1024);
        store.put("r", &response(unix_now(), 1)).unwrap();
        store
            .with(|db| db.execute("UPDATE responses SET input = '{'", []))
            .unwrap();
        let error = store.get("r").err().unwrap();
        assert!(
            error.message.contains("'r'") && error.message.contains("damaged"),
            "{error}"
        );
    }
}
