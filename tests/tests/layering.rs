//! The layering test: workspace dependencies point inward only (DESIGN.md §1).
//!
//! It reads `cargo metadata --no-deps`, places every workspace member by its folder
//! (`FOLDERS`), and checks each normal and build dependency against what that place may
//! depend on (`RULES`). Dev-dependencies are exempt: a test may use anything. A member whose
//! folder no rule covers fails the test until someone places it, here and in DESIGN.md §1.
//!
//! The rules are data; `check` applies them and returns every violation, and the unit tests
//! at the bottom run `check` on synthetic metadata so this test cannot pass by doing nothing.

#[path = "support/metadata.rs"]
mod metadata;

use std::fmt;
use std::path::Path;

use metadata::cargo_metadata;
use serde_json::{Value, json};

/// Where a member's folder puts it: `(folder, place)`, relative to the workspace root and
/// `/`-separated. A `*` segment matches one folder name, and the place's `*` stands for it.
const FOLDERS: &[(&str, &str)] = &[
    ("crates/domain/*", "domain/*"),
    ("crates/infra/*", "infra/*"),
    ("crates/engine", "engine"),
    ("crates/rein", "facade"),
    ("crates/app/*", "app/*"),
    ("crates/cli", "cli"),
    ("tests", "tests"),
    // The feature floor of `make features`: test support, never a dependency of a crate.
    ("tests/feature-floor", "tests"),
    ("examples", "examples"),
];

/// The external crates a domain crate may use: pure computation only.
const DOMAIN_EXTERNAL: &[&str] = &["serde", "serde_json", "thiserror", "sha2"];

/// What each place may depend on: the table of DESIGN.md §1. A place no rule matches
/// (say `domain/clock`) cannot be placed.
const RULES: &[Rule] = &[
    Rule::domain("domain/tool", &[]),
    Rule::domain("domain/run", &["domain/tool"]),
    Rule::domain("domain/policy", &["domain/run", "domain/tool"]),
    Rule::domain("domain/ledger", &["domain/run"]),
    Rule::domain("domain/artifact", &[]),
    Rule::any_external("infra/*", &["domain/*"]),
    Rule::any_external("engine", &["domain/*", "infra/*"]),
    Rule::any_external("facade", &["engine", "domain/*", "infra/*"]),
    // App crates beside the facade (the console): never each other.
    Rule::any_external("app/*", &["engine", "domain/*", "infra/*", "facade"]),
    Rule::any_external("cli", &["facade", "app/*"]),
    Rule::any_external("tests", &["*"]),
    Rule::any_external("examples", &["facade"]),
];

/// One row of the layering table.
#[derive(Debug)]
struct Rule {
    /// The place this rule governs (`*` matches any one name).
    place: &'static str,
    /// The places of the workspace crates it may depend on (`*` alone: any crate).
    internal: &'static [&'static str],
    /// The external crates it may depend on, and who that is in a message; `None`: any.
    external: Option<(&'static str, &'static [&'static str])>,
}

/// A dependency edge, or a member, that the layering table does not allow.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Violation {
    /// A member whose folder no rule covers.
    Unplaced { krate: String, path: String },
    /// A dependency the depending crate's place does not allow.
    Edge {
        from: String,
        from_place: String,
        to: Dependency,
        why: String,
    },
}

/// The far end of a dependency edge.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Dependency {
    /// A crate from outside the workspace.
    External(String),
    /// A workspace member, with its place (`None` if it cannot be placed).
    Member(String, Option<String>),
}

/// A workspace member, placed or not.
#[derive(Debug)]
struct Member<'a> {
    name: &'a str,
    path: String,
    place: Option<String>,
    /// Normal and build dependencies, by package name (renames resolved).
    deps: Vec<&'a str>,
}

impl Rule {
    const fn domain(place: &'static str, internal: &'static [&'static str]) -> Self {
        Rule {
            place,
            internal,
            external: Some(("domain crates", DOMAIN_EXTERNAL)),
        }
    }

    const fn any_external(place: &'static str, internal: &'static [&'static str]) -> Self {
        Rule {
            place,
            internal,
            external: None,
        }
    }

    fn for_place(place: &str) -> Option<&'static Rule> {
        RULES.iter().find(|rule| matches(rule.place, place))
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::Unplaced { krate, path } => write!(
                f,
                "cannot place crate {krate} at path {path}; \
                 add it to the layering table in DESIGN.md §1 and this test"
            ),
            Violation::Edge {
                from,
                from_place,
                to,
                why,
            } => {
                write!(f, "{from} ({from_place}) -> ")?;
                match to {
                    Dependency::External(name) => write!(f, "{name}")?,
                    Dependency::Member(name, Some(place)) => write!(f, "{name} ({place})")?,
                    Dependency::Member(name, None) => write!(f, "{name} (unplaced)")?,
                }
                write!(f, ": {why} (DESIGN.md §1)")
            }
        }
    }
}

/// Checks a `cargo metadata --format-version 1` document against the layering table and
/// returns every violation, sorted (unplaced members first).
fn check(metadata: &Value) -> Vec<Violation> {
    let members = members(metadata);
    let mut violations = Vec::new();
    for member in &members {
        let Some(place) = &member.place else {
            violations.push(Violation::Unplaced {
                krate: member.name.to_owned(),
                path: member.path.clone(),
            });
            continue;
        };
        let rule = Rule::for_place(place).expect("a placed member has a rule");
        for &dep in &member.deps {
            let edge = |to, why| Violation::Edge {
                from: member.name.to_owned(),
                from_place: place.clone(),
                to,
                why,
            };
            if let Some(target) = members.iter().find(|m| m.name == dep) {
                let allowed = rule.internal.iter().any(|&pattern| {
                    pattern == "*"
                        || target
                            .place
                            .as_deref()
                            .is_some_and(|to| matches(pattern, to))
                });
                if !allowed {
                    let why = if rule.internal.is_empty() {
                        format!("{place} may depend on no workspace crate")
                    } else {
                        format!(
                            "{place} may depend only on {} among workspace crates",
                            rule.internal.join(", ")
                        )
                    };
                    let to = Dependency::Member(dep.to_owned(), target.place.clone());
                    violations.push(edge(to, why));
                }
            } else if let Some((who, allowed)) = rule.external
                && !allowed.contains(&dep)
            {
                let why = format!("{who} may use only {}", allowed.join(", "));
                violations.push(edge(Dependency::External(dep.to_owned()), why));
            }
        }
    }
    violations.sort();
    violations.dedup();
    violations
}

/// The workspace members of a metadata document, placed by folder.
fn members(metadata: &Value) -> Vec<Member<'_>> {
    let root = Path::new(metadata["workspace_root"].as_str().expect("workspace_root"));
    let ids: Vec<&str> = metadata["workspace_members"]
        .as_array()
        .expect("workspace_members")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let mut members: Vec<Member<'_>> = metadata["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter(|package| package["id"].as_str().is_some_and(|id| ids.contains(&id)))
        .map(|package| {
            let manifest = Path::new(package["manifest_path"].as_str().expect("manifest_path"));
            let dir = manifest.parent().expect("a manifest is in a folder");
            let path = match dir.strip_prefix(root) {
                Ok(relative) => relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/"),
                Err(_) => dir.display().to_string(),
            };
            let mut deps: Vec<&str> = package["dependencies"]
                .as_array()
                .expect("dependencies")
                .iter()
                .filter(|dep| dep["kind"].as_str() != Some("dev"))
                .filter_map(|dep| dep["name"].as_str())
                .collect();
            deps.sort_unstable();
            deps.dedup();
            Member {
                name: package["name"].as_str().expect("name"),
                place: place(&path),
                path,
                deps,
            }
        })
        .collect();
    members.sort_by(|a, b| a.name.cmp(b.name));
    members
}

/// The place of a member folder, if `FOLDERS` covers it and a rule governs the place.
fn place(path: &str) -> Option<String> {
    let segments: Vec<&str> = path.split('/').collect();
    FOLDERS.iter().find_map(|&(folder, place)| {
        let pattern: Vec<&str> = folder.split('/').collect();
        if pattern.len() != segments.len() {
            return None;
        }
        let mut wildcard = None;
        for (p, s) in pattern.iter().zip(&segments) {
            match *p {
                "*" => wildcard = Some(*s),
                _ if p == s => {}
                _ => return None,
            }
        }
        let place = match wildcard {
            Some(name) => place.replace('*', name),
            None => place.to_owned(),
        };
        Rule::for_place(&place).map(|_| place)
    })
}

/// Whether a place pattern (`domain/*`, `engine`, or `*` for anything) matches a place.
fn matches(pattern: &str, place: &str) -> bool {
    if pattern == "*" {
        return true;
    }
    let (mut p, mut s) = (pattern.split('/'), place.split('/'));
    loop {
        match (p.next(), s.next()) {
            (None, None) => return true,
            (Some(p), Some(s)) if p == "*" || p == s => {}
            _ => return false,
        }
    }
}

#[test]
fn workspace_dependencies_point_inward() {
    let metadata = cargo_metadata();

    // The five domain crates exist for good; finding them proves the members were read.
    let members = members(&metadata);
    for rule in RULES
        .iter()
        .filter(|rule| rule.place.starts_with("domain/"))
    {
        assert!(
            members
                .iter()
                .any(|m| m.place.as_deref() == Some(rule.place)),
            "no workspace member placed at {}: was it moved or renamed? update DESIGN.md §1 and this test",
            rule.place
        );
    }

    let violations = check(&metadata);
    assert!(
        violations.is_empty(),
        "dependencies must point inward; {} violation(s):\n{}",
        violations.len(),
        violations
            .iter()
            .map(|v| format!("  {v}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

// `check` on synthetic metadata: each rule fails when broken.

/// A synthetic member: `deps` are package names, `build:` or `dev:` prefixed for those kinds.
fn krate(name: &str, folder: &str, deps: &[&str]) -> Value {
    let deps: Vec<Value> = deps
        .iter()
        .map(|dep| match dep.split_once(':') {
            Some((kind, name)) => json!({"name": name, "kind": kind}),
            None => json!({"name": dep, "kind": null}),
        })
        .collect();
    json!({
        "name": name,
        "id": format!("path+file:///ws/{folder}#{name}@0.1.0"),
        "manifest_path": format!("/ws/{folder}/Cargo.toml"),
        "dependencies": deps,
    })
}

/// A synthetic `cargo metadata` document whose members are `crates`.
fn metadata(crates: &[Value]) -> Value {
    let ids: Vec<Value> = crates.iter().map(|c| c["id"].clone()).collect();
    json!({"packages": crates, "workspace_members": ids, "workspace_root": "/ws"})
}

/// Checks `crates` and compares the violations' messages with `expect`, in order.
fn check_messages(crates: &[Value], expect: &[&str]) {
    let got: Vec<String> = check(&metadata(crates))
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(got, expect);
}

/// The domain layer as DESIGN.md §1 draws it.
fn domain() -> Vec<Value> {
    vec![
        krate(
            "rein-tool",
            "crates/domain/tool",
            &["serde", "serde_json", "thiserror", "sha2"],
        ),
        krate(
            "rein-run",
            "crates/domain/run",
            &["rein-tool", "serde", "dev:proptest"],
        ),
        krate(
            "rein-policy",
            "crates/domain/policy",
            &["rein-run", "rein-tool", "thiserror"],
        ),
        krate(
            "rein-ledger",
            "crates/domain/ledger",
            &["rein-run", "sha2", "serde_json"],
        ),
        krate(
            "rein-artifact",
            "crates/domain/artifact",
            &["sha2", "serde"],
        ),
    ]
}

#[test]
fn a_clean_graph_has_no_violation() {
    let mut crates = domain();
    crates.extend([
        krate(
            "rein-statemachine",
            "crates/infra/statemachine",
            &["rein-policy", "statig"],
        ),
        krate(
            "rein-storage",
            "crates/infra/storage",
            &["rein-ledger", "tokio", "dev:rein-planner"],
        ),
        krate(
            "rein-planner",
            "crates/infra/planner",
            &["rein-run", "build:cc"],
        ),
        krate(
            "rein-engine",
            "crates/engine",
            &["rein-run", "rein-storage", "tokio", "tower"],
        ),
        krate(
            "rein",
            "crates/rein",
            &["rein-engine", "rein-tool", "rein-planner"],
        ),
        krate("rein-cli", "crates/cli", &["rein", "clap", "anyhow"]),
        krate(
            "rein-workspace-tests",
            "tests",
            &["rein-engine", "rein-cli", "dev:tokio"],
        ),
        krate(
            "rein-examples",
            "examples",
            &["rein", "tokio", "dev:rein-engine"],
        ),
    ]);
    check_messages(&crates, &[]);
}

#[test]
fn a_domain_crate_may_not_use_tokio() {
    let mut crates = domain();
    crates[1] = krate("rein-run", "crates/domain/run", &["rein-tool", "tokio"]);
    check_messages(
        &crates,
        &[
            "rein-run (domain/run) -> tokio: domain crates may use only serde, serde_json, thiserror, sha2 (DESIGN.md §1)",
        ],
    );
}

#[test]
fn build_dependencies_count_dev_dependencies_do_not() {
    let crates = [krate(
        "rein-tool",
        "crates/domain/tool",
        &["build:cc", "dev:tokio"],
    )];
    check_messages(
        &crates,
        &[
            "rein-tool (domain/tool) -> cc: domain crates may use only serde, serde_json, thiserror, sha2 (DESIGN.md §1)",
        ],
    );
}

#[test]
fn domain_edges_follow_the_table() {
    let mut crates = domain();
    crates[3] = krate(
        "rein-ledger",
        "crates/domain/ledger",
        &["rein-run", "rein-policy"],
    );
    crates[0] = krate("rein-tool", "crates/domain/tool", &["rein-artifact"]);
    check_messages(
        &crates,
        &[
            "rein-ledger (domain/ledger) -> rein-policy (domain/policy): domain/ledger may depend only on domain/run among workspace crates (DESIGN.md §1)",
            "rein-tool (domain/tool) -> rein-artifact (domain/artifact): domain/tool may depend on no workspace crate (DESIGN.md §1)",
        ],
    );
}

#[test]
fn a_domain_crate_may_not_depend_outward() {
    let mut crates = domain();
    crates.push(krate("rein-storage", "crates/infra/storage", &["rein-run"]));
    crates[4] = krate("rein-artifact", "crates/domain/artifact", &["rein-storage"]);
    check_messages(
        &crates,
        &[
            "rein-artifact (domain/artifact) -> rein-storage (infra/storage): domain/artifact may depend on no workspace crate (DESIGN.md §1)",
        ],
    );
}

#[test]
fn infra_may_not_depend_on_infra_or_above() {
    let mut crates = domain();
    crates.extend([
        krate(
            "rein-storage",
            "crates/infra/storage",
            &["rein-run", "rein-planner"],
        ),
        krate(
            "rein-planner",
            "crates/infra/planner",
            &["rein-run", "rein-engine"],
        ),
        krate("rein-engine", "crates/engine", &["rein-run"]),
    ]);
    check_messages(
        &crates,
        &[
            "rein-planner (infra/planner) -> rein-engine (engine): infra/planner may depend only on domain/* among workspace crates (DESIGN.md §1)",
            "rein-storage (infra/storage) -> rein-planner (infra/planner): infra/storage may depend only on domain/* among workspace crates (DESIGN.md §1)",
        ],
    );
}

#[test]
fn the_engine_and_the_facade_stay_below_their_callers() {
    let crates = [
        krate("rein-engine", "crates/engine", &["rein"]),
        krate("rein", "crates/rein", &["rein-cli"]),
        krate("rein-cli", "crates/cli", &["rein"]),
    ];
    check_messages(
        &crates,
        &[
            "rein (facade) -> rein-cli (cli): facade may depend only on engine, domain/*, infra/* among workspace crates (DESIGN.md §1)",
            "rein-engine (engine) -> rein (facade): engine may depend only on domain/*, infra/* among workspace crates (DESIGN.md §1)",
        ],
    );
}

#[test]
fn the_cli_uses_the_facade_only() {
    let mut crates = domain();
    crates.extend([
        krate("rein-engine", "crates/engine", &["rein-run"]),
        krate("rein", "crates/rein", &["rein-engine"]),
        krate("rein-cli", "crates/cli", &["rein", "rein-engine", "clap"]),
    ]);
    check_messages(
        &crates,
        &[
            "rein-cli (cli) -> rein-engine (engine): cli may depend only on facade, app/* among workspace crates (DESIGN.md §1)",
        ],
    );
}

#[test]
fn app_crates_sit_beside_the_facade_and_never_use_each_other() {
    let mut crates = domain();
    crates.extend([
        krate("rein-engine", "crates/engine", &["rein-run"]),
        krate("rein", "crates/rein", &["rein-engine"]),
        krate(
            "rein-console",
            "crates/app/console",
            &["rein", "rein-engine", "axum"],
        ),
        krate(
            "rein-worker",
            "crates/app/worker",
            &["rein", "rein-console"],
        ),
        krate(
            "rein-cli",
            "crates/cli",
            &["rein", "rein-console", "rein-worker"],
        ),
    ]);
    check_messages(
        &crates,
        &[
            "rein-worker (app/worker) -> rein-console (app/console): app/worker may depend only on engine, domain/*, infra/*, facade among workspace crates (DESIGN.md §1)",
        ],
    );
}

#[test]
fn examples_use_the_facade_only() {
    let crates = [
        krate("rein-tool", "crates/domain/tool", &[]),
        krate("rein", "crates/rein", &["rein-tool"]),
        krate(
            "rein-examples",
            "examples",
            &["rein", "rein-tool", "dev:rein-tool"],
        ),
    ];
    check_messages(
        &crates,
        &[
            "rein-examples (examples) -> rein-tool (domain/tool): examples may depend only on facade among workspace crates (DESIGN.md §1)",
        ],
    );
}

#[test]
fn an_unknown_folder_or_domain_crate_cannot_be_placed() {
    let mut crates = domain();
    crates.extend([
        krate("rein-widgets", "crates/widgets", &["rein-run"]),
        krate("rein-clock", "crates/domain/clock", &["tokio"]),
        krate("rein-deep", "crates/infra/storage/deep", &[]),
        krate("rein-bench", "bench", &[]),
        krate("rein-cli", "crates/cli", &["rein-widgets"]),
    ]);
    check_messages(
        &crates,
        &[
            "cannot place crate rein-bench at path bench; add it to the layering table in DESIGN.md §1 and this test",
            "cannot place crate rein-clock at path crates/domain/clock; add it to the layering table in DESIGN.md §1 and this test",
            "cannot place crate rein-deep at path crates/infra/storage/deep; add it to the layering table in DESIGN.md §1 and this test",
            "cannot place crate rein-widgets at path crates/widgets; add it to the layering table in DESIGN.md §1 and this test",
            "rein-cli (cli) -> rein-widgets (unplaced): cli may depend only on facade, app/* among workspace crates (DESIGN.md §1)",
        ],
    );
}
