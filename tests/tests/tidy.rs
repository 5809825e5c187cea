//! The tidy test: rules about the source tree itself, checked by plain `cargo test` (the
//! model is rust-analyzer's `tidy.rs`). Every `.rs` file opens with a `//!` line; no test is
//! ignored without a reason or expects a panic; domain crates stay pure (no clock, no I/O,
//! no environment, no threads, and only their allowed dependencies); no crate's modules
//! import each other in a circle; the facade re-exports each name once and no bare function
//! at its root; docs/ARCHITECTURE.md names only types that exist.

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

/// Import circles known to exist, per crate: the modules of each strongly connected group.
/// The check compares the exact set, so an entry that no longer matches fails too. None
/// today: a new circle is a defect to fix, not an entry to add.
const ALLOWED_CIRCLES: &[(&str, &[&str])] = &[];

/// The modules a `crate::…` path in `code` names: `crate::a::X`, `crate::a;` and each
/// first name of a group `crate::{a::X, b, C}`. Names re-exported at the crate root
/// (`crate::X`) are not followed: a module that wants to be below another imports it by
/// its path.
fn crate_paths(code: &str) -> Vec<&str> {
    fn first_name(text: &str) -> &str {
        let text = text.trim_start();
        let end = text
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(text.len());
        &text[..end]
    }
    let mut names = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        let Some(group) = rest.strip_prefix('{') else {
            names.push(first_name(rest));
            continue;
        };
        // The group's top-level items, up to its closing brace.
        let mut depth = 1;
        let mut item_start = 0;
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 1 => {
                    names.push(first_name(&group[item_start..i]));
                    item_start = i + 1;
                }
                _ => {}
            }
            if depth == 0 {
                names.push(first_name(&group[item_start..i]));
                break;
            }
        }
    }
    names.retain(|name| !name.is_empty());
    names
}

/// A crate's modules (the first name under `src/`: `src/fs/read.rs` belongs to `fs`) and
/// the other modules each one imports. Unit tests may reach anywhere.
fn module_imports(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut code: BTreeMap<String, String> = BTreeMap::new();
    for path in files(src, ".rs") {
        let Ok(relative) = path.strip_prefix(src) else {
            continue;
        };
        let Some(first) = relative.components().next() else {
            continue;
        };
        let first = first.as_os_str().to_string_lossy();
        let module = first.strip_suffix(".rs").unwrap_or(&first).to_owned();
        if ["lib", "main", "bin"].contains(&module.as_str()) {
            continue;
        }
        let text = fs::read_to_string(&path).expect("a readable source file");
        let text = text.split("#[cfg(test)]").next().unwrap_or_default();
        let entry = code.entry(module).or_default();
        entry.push_str(text);
        entry.push('\n');
    }
    code.iter()
        .map(|(module, text)| {
            let uses = crate_paths(text)
                .into_iter()
                .filter(|name| *name != module && code.contains_key(*name))
                .map(str::to_owned)
                .collect();
            (module.clone(), uses)
        })
        .collect()
}

/// The groups of modules that import each other in a circle (strongly connected components
/// of more than one module, Tarjan's algorithm), each sorted.
fn circles(imports: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Search<'a> {
        imports: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        groups: Vec<Vec<String>>,
    }
    impl<'a> Search<'a> {
        fn visit(&mut self, module: &'a str) {
            let at = self.index.len();
            self.index.insert(module, at);
            self.low.insert(module, at);
            self.stack.push(module);
            for next in self.imports.get(module).into_iter().flatten() {
                let next = next.as_str();
                if !self.index.contains_key(next) {
                    self.visit(next);
                    let low = self.low[module].min(self.low[next]);
                    self.low.insert(module, low);
                } else if self.stack.contains(&next) {
                    let low = self.low[module].min(self.index[next]);
                    self.low.insert(module, low);
                }
            }
            if self.low[module] == self.index[module] {
                let from = self
                    .stack
                    .iter()
                    .position(|m| *m == module)
                    .expect("a module on the stack");
                let mut group: Vec<String> = self.stack.drain(from..).map(str::to_owned).collect();
                if group.len() > 1 {
                    group.sort();
                    self.groups.push(group);
                }
            }
        }
    }
    let mut search = Search {
        imports,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        groups: Vec::new(),
    };
    for module in imports.keys() {
        if !search.index.contains_key(module.as_str()) {
            search.visit(module);
        }
    }
    search.groups.sort();
    search.groups
}

/// One circle through `group`, shortest first, for the message: `a → b → a`.
fn one_circle(group: &[String], imports: &BTreeMap<String, BTreeSet<String>>) -> String {
    let start = &group[0];
    let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
    let mut todo = std::collections::VecDeque::from([start.as_str()]);
    while let Some(module) = todo.pop_front() {
        for next in imports.get(module).into_iter().flatten() {
            if !group.contains(next) || came_from.contains_key(next.as_str()) {
                continue;
            }
            came_from.insert(next, module);
            if next == start {
                let mut path = vec![start.as_str()];
                let mut at = came_from[start.as_str()];
                while at != start {
                    path.push(at);
                    at = came_from[at];
                }
                path.push(start);
                path.reverse();
                return path.join(" → ");
            }
            todo.push_back(next);
        }
    }
    group.join(", ")
}

#[test]
fn every_crates_modules_import_each_other_without_a_circle() {
    let root = root();
    let mut problems = Vec::new();
    let mut found = BTreeSet::new();
    let mut crates = 0;
    for manifest in files(&root.join("crates"), "Cargo.toml") {
        let dir = manifest.parent().expect("a manifest's folder");
        let src = dir.join("src");
        if !src.is_dir() {
            continue;
        }
        crates += 1;
        let name = dir.strip_prefix(&root).unwrap_or(dir).display().to_string();
        let imports = module_imports(&src);
        for group in circles(&imports) {
            let allowed = ALLOWED_CIRCLES
                .iter()
                .any(|(krate, modules)| *krate == name && *modules == group.as_slice());
            if !allowed {
                problems.push(format!(
                    "{name}: {} (import the shared piece from a module below both)",
                    one_circle(&group, &imports)
                ));
            }
            found.insert((name.clone(), group));
        }
    }
    for (krate, modules) in ALLOWED_CIRCLES {
        let group: Vec<String> = modules.iter().map(|m| (*m).to_owned()).collect();
        if !found.contains(&((*krate).to_owned(), group)) {
            problems.push(format!(
                "{krate}: the allowed circle among {} is gone; remove it from ALLOWED_CIRCLES",
                modules.join(", ")
            ));
        }
    }
    assert!(crates >= 15, "found only {crates} crates under crates/");
    report("import circles among a crate's modules", &problems);
}

/// The sibling modules of each module folder (`src/shell/run.rs`, `src/shell/spawn.rs`, …)
/// and the siblings each one imports through `super::`: a folder's files are modules too.
fn sibling_imports(folder: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut code: BTreeMap<String, String> = BTreeMap::new();
    let Ok(entries) = fs::read_dir(folder) else {
        return BTreeMap::new();
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let (module, file) = if path.is_dir() {
            let name = entry.file_name().to_string_lossy().into_owned();
            (name, path.join("mod.rs"))
        } else {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(module) = name.strip_suffix(".rs") else {
                continue;
            };
            (module.to_owned(), path.clone())
        };
        if ["mod", "lib", "main", "tests"].contains(&module.as_str()) {
            continue;
        }
        let Ok(text) = fs::read_to_string(&file) else {
            continue;
        };
        // Code only: a doc link names a path without importing it.
        let code_lines: String = text
            .split("#[cfg(test)]")
            .next()
            .unwrap_or_default()
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        code.insert(
            module,
            code_lines
                .replace("super::super::", "")
                .replace("super::", "crate::"),
        );
    }
    code.iter()
        .map(|(module, text)| {
            let uses = crate_paths(text)
                .into_iter()
                .filter(|name| *name != module && code.contains_key(*name))
                .map(str::to_owned)
                .collect();
            (module.clone(), uses)
        })
        .collect()
}

#[test]
fn the_files_of_every_module_folder_import_each_other_without_a_circle() {
    let root = root();
    let mut problems = Vec::new();
    let mut folders = 0;
    for manifest in files(&root.join("crates"), "Cargo.toml") {
        let src = manifest.parent().expect("a manifest's folder").join("src");
        let mut todo = vec![src];
        while let Some(dir) = todo.pop() {
            let Ok(entries) = fs::read_dir(&dir) else {
                continue;
            };
            let subfolders: Vec<_> = entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect();
            for folder in &subfolders {
                folders += 1;
                let imports = sibling_imports(folder);
                for group in circles(&imports) {
                    let shown = folder.strip_prefix(&root).unwrap_or(folder).display();
                    problems.push(format!(
                        "{shown}: {} (import the shared piece from a module below both)",
                        one_circle(&group, &imports)
                    ));
                }
            }
            todo.extend(subfolders);
        }
    }
    assert!(
        folders >= 10,
        "found only {folders} module folders under crates/"
    );
    report("import circles among a module folder's files", &problems);
}

#[test]
fn crate_paths_read_single_paths_and_groups() {
    let code =
        "use crate::a::X;\nuse crate::b;\nuse crate::{c::Y, D, e::{f, g}};\nlet x = crate::h::z();";
    assert_eq!(crate_paths(code), ["a", "b", "c", "D", "e", "h"]);
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

/// The facade's modules whose names repeat others on purpose: the prelude gathers the
/// everyday names once more.
const FACADE_GATHERINGS: [&str; 1] = ["prelude"];

/// The lowercase names the facade's root may re-export: a macro and two modules.
const FACADE_ROOT_LOWERCASE: [&str; 4] = ["json", "postgres", "schemars", "shell"];

#[test]
fn the_facade_names_each_item_once() {
    let lib = fs::read_to_string(root().join("crates/rein/src/lib.rs")).expect("the facade");
    let mut module = String::new();
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    let mut problems = Vec::new();
    let mut statement = String::new();
    for line in lib.lines() {
        let code = line.split("//").next().unwrap_or_default().trim();
        if let Some(rest) = code.strip_prefix("pub mod ") {
            module = rest.trim_end_matches(['{', ' ']).to_owned();
            continue;
        }
        if code == "}" && statement.is_empty() {
            module.clear();
            continue;
        }
        if code.starts_with("pub use ") || !statement.is_empty() {
            statement.push_str(code);
            statement.push(' ');
        }
        if !statement.trim_end().ends_with(';') {
            continue;
        }
        let taken = std::mem::take(&mut statement);
        if FACADE_GATHERINGS.contains(&module.as_str()) {
            continue;
        }
        // What the statement names: the last segment of each path it brings in.
        let list = taken
            .trim_start_matches("pub use ")
            .trim_end()
            .trim_end_matches(';');
        let list = list.split_once('{').map_or(list, |(_, inner)| inner);
        for item in list.trim_end_matches('}').split(',') {
            let name = item.rsplit("::").next().unwrap_or_default().trim();
            let name = name.rsplit(" as ").next().unwrap_or_default().trim();
            if name.is_empty() || name == "self" {
                continue;
            }
            let here = if module.is_empty() {
                "the crate root".to_owned()
            } else {
                format!("rein::{module}")
            };
            if let Some(before) = seen.insert(name.to_owned(), here.clone()) {
                problems.push(format!("`{name}` is re-exported in {before} and in {here}"));
            }
            if module.is_empty()
                && name.chars().next().is_some_and(char::is_lowercase)
                && !FACADE_ROOT_LOWERCASE.contains(&name)
            {
                problems.push(format!(
                    "`{name}` is a bare function or module at the crate root; put it in the module it belongs to"
                ));
            }
        }
    }
    report("the facade's re-exports", &problems);
}
