//! Tool names both ways: rein's dotted names (`fs.read`) and the function names providers
//! accept (`^[a-zA-Z0-9_-]{1,64}$`), checked for collisions.

use std::collections::BTreeMap;

use rein_run::ToolName;

/// The control functions a step offers besides tools (`delegate` only while the run may
/// delegate). No tool may take one of these names, whether or not a step offers it.
pub const CONTROL_FUNCTIONS: [&str; 5] = ["transition", "finish", "fail", "ask_human", "delegate"];

/// Why a set of tool names cannot be offered to a model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameError {
    /// Two tools map to the same function name.
    #[error(
        "tools `{first}` and `{second}` both become the function `{function}`: rename one of them"
    )]
    Collision {
        /// One tool.
        first: String,
        /// The other.
        second: String,
        /// The shared function name.
        function: String,
    },
    /// A tool takes the name of a control function.
    #[error("tool `{tool}` would shadow the control function `{function}`: rename the tool")]
    Reserved {
        /// The tool.
        tool: String,
        /// The control function.
        function: String,
    },
}

/// The provider's name for a rein tool: each `.` becomes `_`. Rein names are at most 64
/// bytes of `[A-Za-z0-9_.-]`, so the result always matches `^[a-zA-Z0-9_-]{1,64}$`.
///
/// ```
/// use rein_llm::function_name;
/// use rein_run::ToolName;
/// assert_eq!(function_name(&ToolName::new("fs.read")?), "fs_read");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use]
pub fn function_name(tool: &ToolName) -> String {
    tool.as_str().replace('.', "_")
}

/// A checked mapping between rein tools and function names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameMap {
    to_tool: BTreeMap<String, ToolName>,
}

impl NameMap {
    /// The mapping for `tools`.
    ///
    /// # Errors
    /// [`NameError`] when two tools map to one function name or a tool takes a control
    /// function's name.
    pub fn new<'a>(tools: impl IntoIterator<Item = &'a ToolName>) -> Result<Self, NameError> {
        let mut to_tool: BTreeMap<String, ToolName> = BTreeMap::new();
        for tool in tools {
            let function = function_name(tool);
            if CONTROL_FUNCTIONS.contains(&function.as_str()) {
                return Err(NameError::Reserved {
                    tool: tool.to_string(),
                    function,
                });
            }
            match to_tool.get(&function) {
                Some(other) if other != tool => {
                    return Err(NameError::Collision {
                        first: other.to_string(),
                        second: tool.to_string(),
                        function,
                    });
                }
                _ => {
                    to_tool.insert(function, tool.clone());
                }
            }
        }
        Ok(Self { to_tool })
    }

    /// The function names, sorted.
    pub fn functions(&self) -> impl Iterator<Item = &str> {
        self.to_tool.keys().map(String::as_str)
    }

    /// The rein tool a function name stands for.
    #[must_use]
    pub fn tool(&self, function: &str) -> Option<&ToolName> {
        self.to_tool.get(function)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<ToolName> {
        list.iter().map(|n| ToolName::new(*n).unwrap()).collect()
    }

    #[test]
    fn dotted_names_map_both_ways() {
        let tools = names(&["fs.read", "server.tool-x", "plain"]);
        let map = NameMap::new(&tools).unwrap();
        assert_eq!(map.tool("fs_read").unwrap().as_str(), "fs.read");
        assert_eq!(map.tool("server_tool-x").unwrap().as_str(), "server.tool-x");
        assert_eq!(map.tool("plain").unwrap().as_str(), "plain");
        assert_eq!(map.tool("fs.read"), None);
    }

    #[test]
    fn collisions_and_reserved_names_are_refused() {
        let e = NameMap::new(&names(&["fs.read", "fs_read"])).unwrap_err();
        assert_eq!(
            e,
            NameError::Collision {
                first: "fs.read".into(),
                second: "fs_read".into(),
                function: "fs_read".into()
            }
        );
        let e = NameMap::new(&names(&["finish"])).unwrap_err();
        assert!(e.to_string().contains("control function `finish`"), "{e}");
        let e = NameMap::new(&names(&["delegate"])).unwrap_err();
        assert_eq!(
            e,
            NameError::Reserved {
                tool: "delegate".into(),
                function: "delegate".into()
            }
        );
        // Only the exact function name is reserved.
        assert!(NameMap::new(&names(&["team.delegate", "delegate-task"])).is_ok());
    }

    #[test]
    fn every_valid_tool_name_is_a_valid_function_name() {
        let long = format!("a{}", ".b-_9".repeat(13));
        let tool = ToolName::new(&long[..64]).unwrap();
        let f = function_name(&tool);
        assert!(f.len() <= 64);
        assert!(
            f.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        );
    }
}
