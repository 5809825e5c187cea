//! Tool names both ways: rein's dotted names (`fs.read`) and the function names providers
//! accept (`^[a-zA-Z0-9_-]{1,64}$`), checked for collisions.

use std::collections::BTreeMap;

use rein_run::ToolName;

/// A function a step offers the model besides tools, to steer the run (`delegate` only
/// while the run may delegate). No tool may take one of their names, whether or not a step
/// offers it.
///
/// ```
/// use rein_llm::ControlFunction;
/// assert_eq!(ControlFunction::from_name("ask_human"), Some(ControlFunction::AskHuman));
/// assert_eq!(ControlFunction::AskHuman.name(), "ask_human");
/// assert_eq!(ControlFunction::from_name("fs_read"), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ControlFunction {
    /// `transition`: move the run to another working state.
    Transition,
    /// `finish`: end the run successfully.
    Finish,
    /// `fail`: end the run as failed.
    Fail,
    /// `ask_human`: pause the run and ask a person.
    AskHuman,
    /// `delegate`: hand a sub-task to a child run.
    Delegate,
}

impl ControlFunction {
    /// Every control function, in the order a step offers them.
    pub const ALL: [Self; 5] = [
        Self::Transition,
        Self::Finish,
        Self::Fail,
        Self::AskHuman,
        Self::Delegate,
    ];

    /// The function's name on the wire.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Transition => "transition",
            Self::Finish => "finish",
            Self::Fail => "fail",
            Self::AskHuman => "ask_human",
            Self::Delegate => "delegate",
        }
    }

    /// The control function a model's call of `name` stands for; `None` for any other name
    /// (a tool's, or one no one offered).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }
}

impl std::fmt::Display for ControlFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

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
            if ControlFunction::from_name(&function).is_some() {
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
    fn every_control_function_reads_back_from_its_name_and_only_from_it() {
        for control in ControlFunction::ALL {
            assert_eq!(ControlFunction::from_name(control.name()), Some(control));
            assert_eq!(control.to_string(), control.name());
        }
        for other in ["Finish", "ask-human", "fs_read", ""] {
            assert_eq!(ControlFunction::from_name(other), None, "{other}");
        }
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
