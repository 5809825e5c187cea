//! The fuzz targets' checks under plain `cargo test`, so CI needs no `cargo fuzz`: every
//! seed in `fuzz/seeds/<target>/` with deterministic mutations of it (cut short, bytes
//! flipped, lines doubled and dropped, a newline or invalid UTF-8 spliced in), the
//! `corpus/` and crash `artifacts/` a local `cargo fuzz` run left (if any), and random bytes
//! from proptest. See docs/RELIABILITY.md for the real fuzzing.

#[path = "../../fuzz/checks/mod.rs"]
mod checks;

use std::path::{Path, PathBuf};

use proptest::prelude::*;

/// The files in `fuzz/<dir>/<target>/`, sorted.
fn inputs(dir: &str, target: &str) -> Vec<Vec<u8>> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz")
        .join(dir)
        .join(target);
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_file())
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| std::fs::read(p).expect("read"))
        .collect()
}

/// Deterministic variations of `seed` that a damaged disk or a sloppy writer produces.
fn mutations(seed: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let n = seed.len();
    let points: Vec<usize> = (0..=12).map(|i| n * i / 12).collect();
    for &at in &points {
        out.push(seed[..at].to_vec()); // cut short (torn)
        if at < n {
            for mask in [0x01, 0x20, 0x80] {
                let mut flipped = seed.to_vec();
                flipped[at] ^= mask;
                out.push(flipped);
            }
            let mut spliced = seed.to_vec();
            spliced.insert(at, b'\n');
            out.push(spliced);
            let mut invalid = seed.to_vec();
            invalid.splice(at..at, [0xff, 0xfe]);
            out.push(invalid);
            let mut cut = seed.to_vec();
            cut.drain(at..(at + 7).min(n));
            out.push(cut);
        }
    }
    let lines: Vec<&[u8]> = seed.split(|&b| b == b'\n').collect();
    if lines.len() > 2 {
        let join = |lines: &[&[u8]]| lines.join(&b'\n');
        let mut doubled = lines.clone();
        doubled.insert(1, lines[1]);
        out.push(join(&doubled));
        let mut dropped = lines.clone();
        dropped.remove(1);
        out.push(join(&dropped));
        let mut swapped = lines.clone();
        swapped.swap(0, 1);
        out.push(join(&swapped));
    }
    out
}

#[test]
fn every_seed_and_its_mutations_pass_every_check() {
    let mut tried = 0usize;
    for &(target, check) in checks::TARGETS {
        let seeds = inputs("seeds", target);
        assert!(!seeds.is_empty(), "fuzz/seeds/{target} has no seeds");
        for seed in seeds {
            check(&seed);
            tried += 1;
            for mutated in mutations(&seed) {
                check(&mutated);
                tried += 1;
            }
        }
        // What a local `cargo fuzz` run kept (corpus) or found (crash artifacts), as is.
        for kept in inputs("corpus", target)
            .into_iter()
            .chain(inputs("artifacts", target))
        {
            check(&kept);
            tried += 1;
        }
    }
    eprintln!(
        "fuzz replay: {tried} inputs through {} checks",
        checks::TARGETS.len()
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_pass_every_check(data in prop::collection::vec(any::<u8>(), 0..512)) {
        for &(target, check) in checks::TARGETS {
            if target != "ledger_file" {
                check(&data);
            }
        }
    }

    #[test]
    fn random_json_like_text_passes_every_check(text in r#"[\[\]{}":,0-9a-z_ \n\\.-]{0,200}"#) {
        for &(_, check) in checks::TARGETS {
            check(text.as_bytes());
        }
    }
}
