//! The built-in tools a scenario declares: `rein::tools`' file tools, confined to the
//! scenario's workspace.

use std::path::Path;

use rein::tools::{FsTool, Workspace};

use crate::scenario::Builtin;

/// The built-in `kind`, confined to `workspace`. `None` without a usable workspace (the
/// scenario check refuses a built-in without one).
pub(crate) fn builtin(kind: Builtin, workspace: Option<&Path>) -> Option<FsTool> {
    let workspace = Workspace::open(workspace?).ok()?;
    Some(FsTool::new(kind.op(), workspace))
}
