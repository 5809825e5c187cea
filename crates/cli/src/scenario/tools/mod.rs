//! The tools a scenario can declare: built-in tools confined to a workspace, and fixture
//! tools whose behaviour the file describes.

mod fixture;
mod fs;

pub(crate) use fixture::{CountFile, FixtureTool, PANIC_PREFIX};
pub(crate) use fs::add_builtin;
