//! The tool registry: built once, duplicates refused, read without locks.

use std::sync::Arc;

use rein_storage::{MemoryRegistry, RegistryBuilder};
use rein_tool::{Registry, RegistryError, SharedTool, Tool, ToolError, ToolOutput, ToolSpec};
use serde_json::Value;

struct Echo(ToolSpec);

impl Tool for Echo {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
        Ok(input.into())
    }
}

fn echo(name: &str, description: &str) -> Echo {
    Echo(ToolSpec::new(name.parse().unwrap(), description))
}

#[test]
fn registry_is_send_sync_and_dyn_usable() {
    fn shared(_: Arc<dyn Registry>) {}
    shared(Arc::new(RegistryBuilder::new().build()));
}

/// Registers `names` in order and expects `outcomes`: `Ok` or the duplicate's name.
fn check(names: &[&str], outcomes: &[Result<(), &str>]) -> MemoryRegistry {
    let mut builder = RegistryBuilder::new();
    let got: Vec<Result<(), RegistryError>> = names
        .iter()
        .enumerate()
        .map(|(i, name)| builder.register(echo(name, &format!("tool #{i}"))))
        .collect();
    let expected: Vec<Result<(), RegistryError>> = outcomes
        .iter()
        .map(|o| o.map_err(|name| RegistryError::Duplicate(name.parse().unwrap())))
        .collect();
    assert_eq!(got, expected);
    builder.build()
}

#[test]
fn a_duplicate_name_is_refused_and_the_first_tool_kept() {
    let registry = check(
        &["fs.read", "web_search", "fs.read"],
        &[Ok(()), Ok(()), Err("fs.read")],
    );
    assert_eq!(registry.len(), 2);
    assert_eq!(
        registry.get("fs.read").unwrap().spec().description(),
        "tool #0"
    );
    let err = RegistryError::Duplicate("fs.read".parse().unwrap());
    assert_eq!(
        err.to_string(),
        "a tool named `fs.read` is already registered; tool names must be unique"
    );

    let tools: Vec<SharedTool> = vec![Arc::new(echo("a", "")), Arc::new(echo("a", ""))];
    let refused = MemoryRegistry::from_tools(tools).unwrap_err();
    assert_eq!(refused, RegistryError::Duplicate("a".parse().unwrap()));
}

#[test]
fn get_returns_the_same_tool_every_time_and_specs_keep_registration_order() {
    let registry = check(&["zeta", "alpha", "mid"], &[Ok(()), Ok(()), Ok(())]);
    let first = registry.get("alpha").unwrap();
    assert!(Arc::ptr_eq(&first, &registry.get("alpha").unwrap()));
    assert!(Arc::ptr_eq(&first, &registry.clone().get("alpha").unwrap()));
    assert!(registry.get("missing").is_none());
    assert!(registry.get("../alpha").is_none());
    let names: Vec<String> = registry
        .specs()
        .iter()
        .map(|spec| spec.name().to_string())
        .collect();
    assert_eq!(names, ["zeta", "alpha", "mid"]);
}

#[tokio::test]
async fn a_registered_tool_can_be_called() {
    let registry = check(&["echo"], &[Ok(())]);
    let tool = registry.get("echo").unwrap();
    let output = tool.call_boxed(serde_json::json!({"x": 1})).await.unwrap();
    assert_eq!(output, ToolOutput::from(serde_json::json!({"x": 1})));
}
