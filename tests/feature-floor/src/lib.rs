//! Nothing to use: this crate only pins the feature resolution of `make features`.
//!
//! Cargo resolves the features of a shared dependency (tokio, hyper, syn, serde, …) from the
//! packages it builds, so each feature set of the facade resolves them differently, gets new
//! hashes for them and rebuilds the graph above them: checking the seven facade features one
//! at a time took about 41 minutes on a cold two-core machine. Checked beside this crate,
//! which depends on every integration the facade's features add, a feature alone resolves
//! every third-party crate exactly as `--all-features` does, and only the facade itself (and
//! `rein-tools`, whose `http` and `shell` features stay honest) is checked again.
//!
//! What that gives up: a feature's crate relying on a third-party feature that only another
//! integration turns on would pass here. The no-feature check (the lean default) and the
//! all-features check are run without this crate, and `make features FEATURE_FLOOR=` checks
//! each feature on its own graph.
