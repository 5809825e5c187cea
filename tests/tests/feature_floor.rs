//! The feature floor (`tests/feature-floor`) holds exactly what the facade's features add.
//!
//! `make features` checks each facade feature alone beside `rein-feature-floor`, so that
//! the third-party crates resolve the features they have in the all-features check and its
//! artifacts are reused. That holds only while the floor depends on every optional
//! dependency of the facade, with every feature of it a facade feature turns on, and on
//! nothing else: a crate missing there makes each check resolve its own graph again (tens
//! of minutes on a cold machine), a crate too many makes it check more than the facade can.
//! Features of the facade's non-optional dependencies (`rein-tools/shell`) are left out on
//! purpose: that crate is cheap to check again, so its feature sets stay honest.

#[path = "support/metadata.rs"]
mod metadata;

use std::collections::{BTreeMap, BTreeSet};

use metadata::cargo_metadata;
use serde_json::{Value, json};

/// The facade, and the crate that floors its feature checks.
const FACADE: &str = "rein";
const FLOOR: &str = "rein-feature-floor";

/// Optional dependencies by package name, each with the features asked of it.
type Wanted = BTreeMap<String, BTreeSet<String>>;

/// What the facade's features can add: each optional dependency, with every feature of it
/// that one of the facade's features names (`dep/feature` or `dep?/feature`).
fn added_by_features(facade: &Value) -> Wanted {
    let optional: BTreeSet<&str> = dependencies(facade)
        .filter(|dep| dep["optional"].as_bool() == Some(true))
        .filter_map(|dep| dep["name"].as_str())
        .collect();
    let mut wanted: Wanted = optional
        .iter()
        .map(|name| ((*name).to_owned(), BTreeSet::new()))
        .collect();
    let features = facade["features"].as_object().into_iter().flatten();
    for entry in features.flat_map(|(_, turns_on)| turns_on.as_array().into_iter().flatten()) {
        let Some((dep, feature)) = entry.as_str().and_then(|e| e.split_once('/')) else {
            continue;
        };
        let dep = dep.trim_end_matches('?');
        if let Some(features) = wanted.get_mut(dep) {
            features.insert(feature.to_owned());
        }
    }
    wanted
}

/// What the floor depends on, with the features it asks of each.
fn held_by_floor(floor: &Value) -> Wanted {
    dependencies(floor)
        .filter_map(|dep| {
            let features = dep["features"].as_array().into_iter().flatten();
            let features = features.filter_map(Value::as_str).map(str::to_owned);
            Some((dep["name"].as_str()?.to_owned(), features.collect()))
        })
        .collect()
}

/// A package's normal dependencies.
fn dependencies(package: &Value) -> impl Iterator<Item = &Value> {
    let all = package["dependencies"].as_array().into_iter().flatten();
    all.filter(|dep| dep["kind"].is_null())
}

/// Every difference between what the facade's features add and what the floor holds, as a
/// message naming the fix.
fn gaps(metadata: &Value) -> Vec<String> {
    let wanted = added_by_features(find(metadata, FACADE));
    let held = held_by_floor(find(metadata, FLOOR));
    let mut gaps = Vec::new();
    for (dep, features) in &wanted {
        let Some(has) = held.get(dep) else {
            gaps.push(format!(
                "the facade's features add {dep}, which {FLOOR} does not depend on: add it to \
                 tests/feature-floor/Cargo.toml"
            ));
            continue;
        };
        for feature in features.difference(has) {
            gaps.push(format!(
                "a facade feature turns on {dep}/{feature}, which {FLOOR} does not: add \
                 \"{feature}\" to its {dep} in tests/feature-floor/Cargo.toml"
            ));
        }
        for feature in has.difference(features) {
            gaps.push(format!(
                "{FLOOR} turns on {dep}/{feature}, which no facade feature does: remove it \
                 from tests/feature-floor/Cargo.toml"
            ));
        }
    }
    for dep in held.keys().filter(|dep| !wanted.contains_key(*dep)) {
        gaps.push(format!(
            "{FLOOR} depends on {dep}, which is not an optional dependency of the facade: \
             remove it from tests/feature-floor/Cargo.toml"
        ));
    }
    gaps
}

/// The package of that name in a metadata document.
fn find<'a>(metadata: &'a Value, name: &str) -> &'a Value {
    let mut packages = metadata["packages"].as_array().into_iter().flatten();
    packages
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("cargo metadata lists no package {name}"))
}

#[test]
fn the_floor_holds_what_the_facade_features_add_and_nothing_else() {
    let metadata = cargo_metadata();
    let wanted = added_by_features(find(&metadata, FACADE));
    // The facade's integrations exist for good; finding them proves the features were read.
    assert!(wanted.contains_key("rein-llm") && wanted["rein-llm"].contains("fake-server"));
    let gaps = gaps(&metadata);
    assert!(gaps.is_empty(), "{}", gaps.join("\n"));
}

// `gaps` on synthetic metadata: each kind of difference is reported.

/// A synthetic package: `deps` as `(name, optional, features)`, `features` as the manifest's.
fn package(name: &str, deps: &[(&str, bool, &[&str])], features: &Value) -> Value {
    let deps: Vec<Value> = deps
        .iter()
        .map(|(dep, optional, f)| json!({"name": dep, "kind": null, "optional": optional, "features": f}))
        .collect();
    json!({"name": name, "dependencies": deps, "features": features})
}

/// The facade of the synthetic cases: two integrations, one with a feature of its own, and
/// a non-optional crate whose feature is left out of the floor.
fn facade() -> Value {
    package(
        FACADE,
        &[("llm", true, &[]), ("pg", true, &[]), ("tools", false, &[])],
        &json!({"llm": ["dep:llm"], "fake": ["llm", "llm/fake"], "pg": ["dep:pg"], "shell": ["tools/shell"]}),
    )
}

fn gaps_with_floor(deps: &[(&str, bool, &[&str])]) -> Vec<String> {
    gaps(&json!({"packages": [facade(), package(FLOOR, deps, &json!({}))]}))
}

#[test]
fn a_matching_floor_has_no_gap() {
    assert_eq!(
        gaps_with_floor(&[("llm", false, &["fake"]), ("pg", false, &[])]),
        Vec::<String>::new()
    );
}

#[test]
fn a_missing_integration_or_feature_is_a_gap() {
    assert_eq!(
        gaps_with_floor(&[("llm", false, &[])]),
        [
            "a facade feature turns on llm/fake, which rein-feature-floor does not: add \"fake\" \
             to its llm in tests/feature-floor/Cargo.toml",
            "the facade's features add pg, which rein-feature-floor does not depend on: add it \
             to tests/feature-floor/Cargo.toml",
        ]
    );
}

#[test]
fn more_than_the_features_add_is_a_gap() {
    assert_eq!(
        gaps_with_floor(&[
            ("llm", false, &["fake", "extra"]),
            ("pg", false, &[]),
            ("tools", false, &[]),
        ]),
        [
            "rein-feature-floor turns on llm/extra, which no facade feature does: remove it \
             from tests/feature-floor/Cargo.toml",
            "rein-feature-floor depends on tools, which is not an optional dependency of the \
             facade: remove it from tests/feature-floor/Cargo.toml",
        ]
    );
}
