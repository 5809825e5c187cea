//! How many bytes a value's JSON takes, counted as it is written rather than kept: what
//! the prompt's size estimate and the measure of a request while it is made both use.

/// The length of `value`'s compact JSON, counted as it is written rather than kept (0 when
/// it cannot be encoded, which a request never fails to be).
pub(crate) fn json_len(value: &impl serde::Serialize) -> usize {
    /// A writer that keeps nothing but the count.
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 = self.0.saturating_add(bytes.len());
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, value).map_or(0, |()| count.0)
}
