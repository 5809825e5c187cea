//! rein's artifact domain: content-addressed artifact references, checksums and the ArtifactStore port
