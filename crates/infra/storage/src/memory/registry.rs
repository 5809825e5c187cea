//! `RegistryBuilder` and `MemoryRegistry`: the tool registry, built once and then only read.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use rein_tool::{Registry, RegistryError, SharedTool, Tool, ToolName, ToolSpec};

/// Collects tools, refusing duplicate names, and freezes them into a [`MemoryRegistry`].
///
/// ```
/// use rein_tool::{Registry, RegistryError, Tool, ToolError, ToolOutput, ToolSpec};
/// use rein_storage::RegistryBuilder;
/// use serde_json::Value;
///
/// struct Echo(ToolSpec);
/// impl Tool for Echo {
///     fn spec(&self) -> &ToolSpec { &self.0 }
///     async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> { Ok(input.into()) }
/// }
///
/// let echo = || Echo(ToolSpec::new("echo".parse().unwrap(), "Returns its input"));
/// let mut builder = RegistryBuilder::new();
/// builder.register(echo())?;
/// assert_eq!(builder.register(echo()), Err(RegistryError::Duplicate("echo".parse()?)));
///
/// let registry = builder.build();
/// assert!(registry.get("echo").is_some());
/// assert!(registry.get("missing").is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Default)]
#[must_use]
pub struct RegistryBuilder {
    tools: Vec<SharedTool>,
    by_name: HashMap<ToolName, usize>,
}

/// The tools an engine can call, looked up by name without any lock.
///
/// Built once by a [`RegistryBuilder`] and immutable afterwards: [`Registry::get`] is one
/// hash lookup and one reference-count increment, and [`Registry::specs`] lists the tools
/// in registration order. Cloning shares the same tools.
#[derive(Clone)]
pub struct MemoryRegistry {
    inner: Arc<RegistryBuilder>,
}

impl RegistryBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `tool` under the name in its spec.
    ///
    /// # Errors
    /// [`RegistryError::Duplicate`] when a tool with that name is already registered; the
    /// builder is left as it was.
    pub fn register<T: Tool>(&mut self, tool: T) -> Result<(), RegistryError> {
        self.register_shared(Arc::new(tool))
    }

    /// Adds an already shared tool under the name in its spec.
    ///
    /// # Errors
    /// [`RegistryError::Duplicate`] when a tool with that name is already registered; the
    /// builder is left as it was.
    pub fn register_shared(&mut self, tool: SharedTool) -> Result<(), RegistryError> {
        let name = tool.spec().name().clone();
        if self.by_name.contains_key(&name) {
            return Err(RegistryError::Duplicate(name));
        }
        self.by_name.insert(name, self.tools.len());
        self.tools.push(tool);
        Ok(())
    }

    /// Freezes the registered tools into a registry.
    pub fn build(self) -> MemoryRegistry {
        MemoryRegistry {
            inner: Arc::new(self),
        }
    }
}

impl MemoryRegistry {
    /// A registry holding `tools`, in order.
    ///
    /// ```
    /// use rein_storage::MemoryRegistry;
    /// let empty = MemoryRegistry::from_tools([])?;
    /// assert!(empty.is_empty());
    /// # Ok::<(), rein_tool::RegistryError>(())
    /// ```
    ///
    /// # Errors
    /// [`RegistryError::Duplicate`] naming the first name given twice.
    pub fn from_tools(tools: impl IntoIterator<Item = SharedTool>) -> Result<Self, RegistryError> {
        let mut builder = RegistryBuilder::new();
        for tool in tools {
            builder.register_shared(tool)?;
        }
        Ok(builder.build())
    }

    /// How many tools are registered.
    #[must_use]
    pub fn len(&self) -> usize {
        self.inner.tools.len()
    }

    /// Whether no tool is registered.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.inner.tools.is_empty()
    }
}

impl Registry for MemoryRegistry {
    fn get(&self, name: &str) -> Option<SharedTool> {
        let index = *self.inner.by_name.get(name)?;
        self.inner.tools.get(index).map(Arc::clone)
    }

    fn specs(&self) -> Vec<ToolSpec> {
        self.inner
            .tools
            .iter()
            .map(|tool| tool.spec().clone())
            .collect()
    }
}

impl fmt::Debug for RegistryBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.tools.iter().map(|tool| tool.spec().name()))
            .finish()
    }
}

impl fmt::Debug for MemoryRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("MemoryRegistry").field(&self.inner).finish()
    }
}
