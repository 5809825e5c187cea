//! Fixture tools: tools whose behaviour the scenario file describes — a fixed output, a
//! sequence, transient failures first, a delay, a hang, a panic, an echo — to exercise the
//! engine's policies and resilience without real side effects.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use rein::tool::Tool;
use rein::tools::Workspace;
use rein::{ToolError, ToolOutput, ToolSpec, Value, json};

use crate::scenario::model::Behavior;

/// The start of every fixture panic message; the CLI's panic hook stays quiet about these
/// (the engine turns them into `ToolError::Panicked`, recorded in the ledger).
pub(crate) const PANIC_PREFIX: &str = "fixture tool panicked on purpose: ";

/// A tool that behaves as its scenario says.
#[derive(Debug)]
pub(crate) struct FixtureTool {
    spec: ToolSpec,
    behavior: Behavior,
    fail_first: u32,
    delay: Duration,
    count_file: Option<CountFile>,
    executions: AtomicU32,
}

/// A fixture's count file: a path inside the data directory, opened confined to it.
#[derive(Debug, Clone)]
pub(crate) struct CountFile {
    /// The data directory.
    pub(crate) data_dir: PathBuf,
    /// The path relative to it (checked by the scenario check).
    pub(crate) path: String,
}

impl FixtureTool {
    /// A fixture with `spec` doing `behavior`, after `fail_first` transient failures, each
    /// execution delayed by `delay` and, with a `count_file`, appended to it.
    pub(crate) fn new(
        spec: ToolSpec,
        behavior: Behavior,
        fail_first: u32,
        delay: Duration,
        count_file: Option<CountFile>,
    ) -> Self {
        Self {
            spec,
            behavior,
            fail_first,
            delay,
            count_file,
            executions: AtomicU32::new(0),
        }
    }
}

impl Tool for FixtureTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
        let n = self.executions.fetch_add(1, Ordering::SeqCst) + 1;
        let name = self.spec.name().to_string();
        if let Some(file) = self.count_file.clone() {
            let line = json!({"tool": name, "execution": n, "input": input}).to_string();
            tokio::task::spawn_blocking(move || count(&file, &line))
                .await
                .map_err(|e| ToolError::failed(format!("count file: {e}")))?
                .map_err(|e| ToolError::failed(format!("cannot append to the count file: {e}")))?;
        }
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        if n <= self.fail_first {
            return Err(ToolError::transient(format!(
                "fixture `{name}` is set to fail its first {}; this was execution {n}",
                plural(self.fail_first, "execution")
            )));
        }
        match &self.behavior {
            Behavior::Output(value) => Ok(value.clone().into()),
            Behavior::Sequence(values) => {
                let i = (n - self.fail_first - 1) as usize;
                let value = values.get(i).or_else(|| values.last()).cloned();
                Ok(value.unwrap_or(Value::Null).into())
            }
            Behavior::Echo => Ok(input.into()),
            Behavior::Hang => std::future::pending().await,
            Behavior::Panic(message) => panic!("{PANIC_PREFIX}{message}"),
            Behavior::Fail { message, transient } => Err(if *transient {
                ToolError::transient(message.clone())
            } else {
                ToolError::failed(message.clone())
            }),
        }
    }
}

/// Appends `line` to the count file, confined to the data directory, and forces it to disk.
fn count(file: &CountFile, line: &str) -> std::io::Result<()> {
    let confined = Workspace::open(&file.data_dir)
        .map_err(std::io::Error::other)?
        .open_append(&file.path)
        .map_err(std::io::Error::other);
    let mut out = confined?;
    out.write_all(format!("{line}\n").as_bytes())?;
    out.sync_data()
}

/// `n thing` or `n things`.
fn plural(n: u32, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else {
        format!("{n} {thing}s")
    }
}
