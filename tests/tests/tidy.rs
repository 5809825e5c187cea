//! The tidy test: rules about the source tree itself, checked by plain `cargo test` (the
//! model is rust-analyzer's `tidy.rs`). Every `.rs` file opens with a `//!` line; no test is
//! ignored without a reason or expects a panic; domain crates stay pure (no clock, no I/O,
//! no environment, no threads, and only their allowed dependencies); the engine's modules
//! import each other without a circle; docs/ARCHITECTURE.md names only types that exist.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The workspace root (this package lives in `tests/`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// Every file under `dir` whose name ends with `ext`, skipping build output and hidden
/// folders, sorted.
fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(dir) = todo.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !name.starts_with('.') && name != "target" && name != "node_modules" {
                    todo.push(path);
                }
            } else if name.ends_with(ext) {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The workspace's Rust sources: crates, tests, examples.
fn sources() -> Vec<(PathBuf, String)> {
    let root = root();
    ["crates", "tests", "examples"]
        .iter()
        .flat_map(|dir| files(&root.join(dir), ".rs"))
        .map(|path| {
            let text = fs::read_to_string(&path).expect("a readable source file");
            let shown = path.strip_prefix(&root).unwrap_or(&path).to_path_buf();
            (shown, text)
        })
        .collect()
}

/// Fails with every problem at once, one per line.
fn report(what: &str, problems: &[String]) {
    assert!(problems.is_empty(), "{what}:\n  {}", problems.join("\n  "));
}

#[test]
fn every_rust_file_opens_with_a_module_doc_line() {
    let problems: Vec<String> = sources()
        .into_iter()
        .filter(|(_, text)| !text.starts_with("//!"))
        .map(|(path, _)| format!("{} does not open with a `//!` line", path.display()))
        .collect();
    report("files without a module doc line", &problems);
}

#[test]
fn no_test_is_ignored_without_a_reason_or_expects_a_panic() {
    // Spelled in pieces so this file does not find itself.
    let bare_ignore = format!("#[{}]", "ignore");
    let expects_panic = format!("{}_{}", "should", "panic");
    let mut problems = Vec::new();
    for (path, text) in sources() {
        for (i, line) in text.lines().enumerate() {
            let at = format!("{}:{}", path.display(), i + 1);
            if line.contains(&bare_ignore) {
                problems.push(format!(
                    "{at}: an ignored test says why: `#[ignore = \"…\"]`"
                ));
            }
            if line.contains(&expects_panic) {
                problems.push(format!(
                    "{at}: assert the `Err` instead of expecting a panic"
                ));
            }
        }
    }
    report("tests that hide or expect failures", &problems);
}

/// Calls a domain crate may not make: domain code takes time, identity and configuration
/// as inputs and does no I/O (DESIGN.md §1).
const FORBIDDEN_IN_DOMAIN: [&str; 7] = [
    "SystemTime::now",
    "Instant::now",
    "std::fs",
    "std::env::var",
    "std::net",
    "thread::spawn",
    "tokio::",
];

/// The external crates a domain crate may depend on (DESIGN.md §1).
const DOMAIN_DEPENDENCIES: [&str; 4] = ["serde", "serde_json", "thiserror", "sha2"];

#[test]
fn domain_crates_stay_pure() {
    let root = root();
    let mut problems = Vec::new();
    for (path, text) in sources() {
        if !path.starts_with("crates/domain") || path.components().any(|c| c.as_os_str() == "tests")
        {
            continue;
        }
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for call in FORBIDDEN_IN_DOMAIN {
                if code.contains(call) {
                    problems.push(format!(
                        "{}:{}: `{call}` in a domain crate",
                        path.display(),
                        i + 1
                    ));
                }
            }
        }
    }
    for manifest in files(&root.join("crates/domain"), "Cargo.toml") {
        let text = fs::read_to_string(&manifest).expect("a readable manifest");
        let mut section = String::new();
        for line in text.lines().map(str::trim) {
            if line.starts_with('[') {
                section = line.to_owned();
                continue;
            }
            if section != "[dependencies]" || line.is_empty() || line.starts_with('#') {
                continue;
            }
            let name = line
                .split(['.', '=', ' '])
                .next()
                .unwrap_or_default()
                .trim();
            if !name.starts_with("rein-") && !DOMAIN_DEPENDENCIES.contains(&name) {
                problems.push(format!(
                    "{}: dependency `{name}` is not allowed in a domain crate",
                    manifest.strip_prefix(&root).unwrap_or(&manifest).display()
                ));
            }
        }
    }
    report("impure domain code", &problems);
}

#[test]
fn the_engines_modules_import_each_other_without_a_circle() {
    let dir = root().join("crates/engine/src");
    let modules: BTreeMap<String, String> = files(&dir, ".rs")
        .into_iter()
        .filter_map(|path| {
            let name = path.file_stem()?.to_string_lossy().into_owned();
            let text = fs::read_to_string(&path).ok()?;
            // Unit tests may reach anywhere.
            let code = text
                .split("#[cfg(test)]")
                .next()
                .unwrap_or_default()
                .to_owned();
            (name != "lib").then_some((name, code))
        })
        .collect();
    let imports: BTreeMap<&str, BTreeSet<&str>> = modules
        .iter()
        .map(|(name, code)| {
            let uses = modules
                .keys()
                .filter(|other| *other != name)
                .filter(|other| {
                    code.contains(&format!("crate::{other}::"))
                        || code.contains(&format!("crate::{other};"))
                })
                .map(String::as_str)
                .collect();
            (name.as_str(), uses)
        })
        .collect();
    // Depth-first search for a back edge.
    fn visit<'a>(
        module: &'a str,
        imports: &BTreeMap<&'a str, BTreeSet<&'a str>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
        circles: &mut Vec<String>,
    ) {
        if let Some(at) = path.iter().position(|m| *m == module) {
            let mut circle = path[at..].to_vec();
            circle.push(module);
            circles.push(circle.join(" → "));
            return;
        }
        if !done.insert(module) {
            return;
        }
        path.push(module);
        for next in imports.get(module).into_iter().flatten() {
            visit(next, imports, path, done, circles);
        }
        path.pop();
    }
    let mut circles = Vec::new();
    let mut done = BTreeSet::new();
    for module in imports.keys() {
        visit(module, &imports, &mut Vec::new(), &mut done, &mut circles);
    }
    report("import circles among the engine's modules", &circles);
}

/// Types the architecture document may name that live outside the workspace.
const EXTERNAL_TYPES: [&str; 7] = [
    "Instant",
    "SystemTime",
    "Map",
    "Value",
    "Arc",
    "Duration",
    "BTreeMap",
];

#[test]
fn the_architecture_document_names_only_types_that_exist() {
    let root = root();
    let doc = fs::read_to_string(root.join("docs/ARCHITECTURE.md")).expect("docs/ARCHITECTURE.md");
    let sources: String = sources().into_iter().map(|(_, text)| text + "\n").collect();
    let mut defined = BTreeSet::new();
    for line in sources.lines() {
        let words: Vec<&str> = line
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .collect();
        // `struct X`, `enum X`, `trait X`, `type X`
        for pair in words.windows(2) {
            if ["struct", "enum", "trait", "type"].contains(&pair[0]) {
                defined.insert(pair[1].to_owned());
            }
        }
        // An enum variant: a line that starts with the name, then `{`, `(` or `,`.
        let trimmed = line.trim_start();
        if let Some(first) = words.first()
            && trimmed.starts_with(first)
            && trimmed[first.len()..]
                .trim_start()
                .starts_with(['{', '(', ','])
        {
            defined.insert((*first).to_owned());
        }
    }
    let mut problems = BTreeSet::new();
    for span in doc.split('`').skip(1).step_by(2) {
        for word in span.split(|c: char| !c.is_alphanumeric()) {
            let camel = word.chars().next().is_some_and(char::is_uppercase)
                && word.chars().any(char::is_lowercase);
            if camel && !defined.contains(word) && !EXTERNAL_TYPES.contains(&word) {
                problems.insert(format!(
                    "`{word}` is named but defined nowhere in the workspace"
                ));
            }
        }
    }
    report(
        "docs/ARCHITECTURE.md",
        &problems.into_iter().collect::<Vec<_>>(),
    );
}
