//! Standard output that a reader may close early: `rein inspect RUN | head -1` reads one
//! line and closes the pipe. `println!` panics then (exit 101); every command prints through
//! `outln!` and `out!` instead, which take a closed stdout as the reader having seen
//! enough: nothing more is printed, the command finishes its work, and `rein` exits with
//! the command's own code. Any other write error is reported once, and `rein` exits with 1.

use std::fmt;
use std::io::{ErrorKind, Write as _};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once stdout refused a write: nothing more is tried.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// The first write error other than a closed pipe, for `main` to report.
static FAILED: Mutex<Option<String>> = Mutex::new(None);

/// `println!`, quiet when the reader closed stdout (see the module's docs).
macro_rules! outln {
    () => {
        $crate::output::write(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::write(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!`, quiet when the reader closed stdout (see the module's docs).
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::write(format_args!($($arg)*))
    };
}

/// Writes `args` to stdout unless it was closed or failed before.
pub(crate) fn write(args: fmt::Arguments<'_>) {
    if CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let written = std::io::stdout().lock().write_fmt(args);
    if let Err(e) = written {
        CLOSED.store(true, Ordering::Relaxed);
        if e.kind() != ErrorKind::BrokenPipe {
            let mut failed = FAILED
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            failed.get_or_insert_with(|| e.to_string());
        }
    }
}

/// Flushes stdout, so a line still being written (a model's reply streaming in) shows.
pub(crate) fn flush() {
    if CLOSED.load(Ordering::Relaxed) {
        return;
    }
    if std::io::stdout().lock().flush().is_err() {
        CLOSED.store(true, Ordering::Relaxed);
    }
}

/// Why writing to stdout failed, when it failed for another reason than a closed pipe.
pub(crate) fn failure() -> Option<String> {
    FAILED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
}
