//! The tool domain of rein: what a tool is, what it may do, and how it fails.
//!
//! A [`Tool`] is an async function from JSON input to JSON output, described by a
//! [`ToolSpec`] (name, description, input and output JSON Schema) and classified by its
//! [`Annotations`] (read-only, destructive, idempotent, cacheable, risk, approval, timeout).
//! The engine decides from the annotations *where* a tool may run (side effects only in
//! `act`), *whether* it needs approval, and *how* it runs (retries only for idempotent
//! tools). A tool fails with a typed [`ToolError`].
//!
//! Implementors write plain `async fn`:
//!
//! ```
//! use rein_tool::{Annotations, Tool, ToolError, ToolOutput, ToolSpec};
//! use serde_json::{json, Value};
//!
//! struct Echo(ToolSpec);
//!
//! impl Tool for Echo {
//!     fn spec(&self) -> &ToolSpec {
//!         &self.0
//!     }
//!     async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
//!         Ok(ToolOutput::new(input))
//!     }
//! }
//!
//! let spec = ToolSpec::new("echo".parse()?, "Returns its input")
//!     .with_annotations(Annotations::read_only());
//! let echo = Echo(spec);
//! assert_eq!(echo.spec().name().as_str(), "echo");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! This crate is pure: no I/O, no clocks, no runtime. The engine holds tools behind the
//! object-safe [`DynTool`] twin, implemented for every [`Tool`].

mod annotations;
mod ask;
mod attachment;
mod digest;
mod error;
mod name;
mod output;
mod port;
mod scope;
mod spec;

pub mod duration_ms;

pub use annotations::{Annotations, AnnotationsError, RiskLevel};
pub use ask::{
    ElicitAnswer, Elicitation, Elicitor, SampleError, SampleReply, SampleRequest, SampleRole,
    Sampler,
};
pub use attachment::{Attachment, AttachmentError};
pub use digest::{Digest, DigestError};
pub use error::ToolError;
pub use name::{ToolName, ToolNameError};
pub use output::ToolOutput;
pub use port::{BoxFuture, DynTool, Registry, RegistryError, SharedTool, Tool};
pub use scope::{CallScope, CallScopes, ToolNotice};
pub use spec::ToolSpec;
