//! Small text helpers below every command: text cut to fit a line (the renderings of a run,
//! `render`, and the drawings of a tree of runs, `tree`) and ages as a person writes them
//! (`rein runs prune --older-than`).

use std::time::Duration;

/// `text` cut to `max` characters, with an ellipsis if it was longer.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// Parses an age such as `90s`, `30m`, `12h` or `7d`.
///
/// # Errors
/// A message saying what a duration looks like.
pub(crate) fn parse_age(text: &str) -> Result<Duration, String> {
    let bad = || {
        format!(
            "{text:?} is not a duration; write a whole number and a unit: s, m, h or d (e.g. 90m, 12h, 30d)"
        )
    };
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().map_err(|_| bad())?;
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        _ => return Err(bad()),
    };
    number
        .checked_mul(seconds)
        .map(Duration::from_secs)
        .ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_is_cut_with_an_ellipsis() {
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abc", 4), "abc");
    }

    #[test]
    fn ages_take_a_number_and_a_unit() {
        assert_eq!(parse_age("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_age("30m"), Ok(Duration::from_secs(1_800)));
        assert_eq!(parse_age("12h"), Ok(Duration::from_secs(43_200)));
        assert_eq!(parse_age("7d"), Ok(Duration::from_secs(604_800)));
        assert_eq!(parse_age("0s"), Ok(Duration::ZERO));
        for bad in ["", "12", "h", "1.5h", "-1d", "3w", "99999999999999999999d"] {
            let message = parse_age(bad).unwrap_err();
            assert!(message.contains("is not a duration"), "{bad}: {message}");
        }
    }
}
