//! `Money` and `Cost`: what a model call cost, exactly (integer micro-units of a named
//! currency, never a float), or that nobody can say (a model without a price).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Micro-units in one unit of a currency.
const MICROS: u64 = 1_000_000;

/// A currency, by its ISO 4217 code: three ASCII capital letters (`USD`, `EUR`).
///
/// ```
/// use rein_run::Currency;
/// let eur: Currency = "EUR".parse()?;
/// assert_eq!(eur, Currency::EUR);
/// assert!("euro".parse::<Currency>().is_err());
/// # Ok::<(), rein_run::MoneyError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Currency([u8; 3]);

impl Currency {
    /// United States dollars.
    pub const USD: Self = Self(*b"USD");
    /// Euros.
    pub const EUR: Self = Self(*b"EUR");
    /// Pounds sterling.
    pub const GBP: Self = Self(*b"GBP");
    /// ISO 4217's "no currency": the unit of costs recorded before costs named their
    /// currency, and of prices written without one.
    pub const UNNAMED: Self = Self(*b"XXX");

    /// The currency with ISO 4217 code `code`.
    ///
    /// # Errors
    /// [`MoneyError::Currency`] when `code` is not three ASCII capital letters.
    pub fn new(code: &str) -> Result<Self, MoneyError> {
        match code.as_bytes() {
            &[a, b, c] if [a, b, c].iter().all(u8::is_ascii_uppercase) => Ok(Self([a, b, c])),
            _ => Err(MoneyError::Currency {
                code: code.chars().take(16).collect(),
            }),
        }
    }

    /// The code (`USD`).
    #[must_use]
    pub fn code(&self) -> &str {
        // Three ASCII capitals, by construction.
        std::str::from_utf8(&self.0).unwrap_or("XXX")
    }

    /// The sign written before an amount (`$`), for the currencies that have a common one.
    const fn symbol(self) -> Option<&'static str> {
        match &self.0 {
            b"USD" => Some("$"),
            b"EUR" => Some("€"),
            b"GBP" => Some("£"),
            b"JPY" => Some("¥"),
            _ => None,
        }
    }
}

impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

impl fmt::Debug for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Currency({})", self.code())
    }
}

impl FromStr for Currency {
    type Err = MoneyError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl TryFrom<String> for Currency {
    type Error = MoneyError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::new(&s)
    }
}

impl From<Currency> for String {
    fn from(c: Currency) -> Self {
        c.code().to_owned()
    }
}

/// An amount of money: integer micro-units (millionths) of a [`Currency`], so sums are
/// exact. Shown as money: `$0.0123`, `€1.50`, `1.50 CHF`.
///
/// ```
/// use rein_run::{Currency, Money};
/// let a = Money::from_micros(12_300, Currency::USD);
/// assert_eq!(a.to_string(), "$0.0123");
/// assert_eq!(Money::from_micros(1_500_000, Currency::EUR).to_string(), "€1.50");
/// assert_eq!("1.5 CHF".parse::<Money>()?.to_string(), "1.50 CHF");
/// assert_eq!("$0.0123".parse::<Money>()?, a);
/// # Ok::<(), rein_run::MoneyError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Money {
    micros: u64,
    currency: Currency,
}

impl Money {
    /// `micros` millionths of `currency`.
    #[must_use]
    pub const fn from_micros(micros: u64, currency: Currency) -> Self {
        Self { micros, currency }
    }

    /// Nothing, in `currency`.
    #[must_use]
    pub const fn zero(currency: Currency) -> Self {
        Self::from_micros(0, currency)
    }

    /// The amount in millionths of the currency.
    #[must_use]
    pub const fn micros(&self) -> u64 {
        self.micros
    }

    /// The currency.
    #[must_use]
    pub const fn currency(&self) -> Currency {
        self.currency
    }

    /// The sum, when both are in the same currency (saturating at the largest amount).
    #[must_use]
    pub const fn plus(self, other: Self) -> Option<Self> {
        if self.currency.0[0] == other.currency.0[0]
            && self.currency.0[1] == other.currency.0[1]
            && self.currency.0[2] == other.currency.0[2]
        {
            Some(Self::from_micros(
                self.micros.saturating_add(other.micros),
                self.currency,
            ))
        } else {
            None
        }
    }
}

impl fmt::Display for Money {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let units = self.micros / MICROS;
        let fraction = format!("{:06}", self.micros % MICROS);
        // At least cents; below them, as many digits as the amount has.
        let fraction = fraction.trim_end_matches('0');
        let fraction = format!("{fraction:0<2}");
        match self.currency.symbol() {
            Some(sign) => write!(f, "{sign}{units}.{fraction}"),
            None => write!(f, "{units}.{fraction} {}", self.currency),
        }
    }
}

impl FromStr for Money {
    type Err = MoneyError;

    /// `1.50 USD`, `USD 1.50` or `$1.50` (the signs of [`Money`]'s `Display`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let signed = [
            ("$", Currency::USD),
            ("€", Currency::EUR),
            ("£", Currency::GBP),
            ("¥", Currency(*b"JPY")),
        ]
        .into_iter()
        .find_map(|(sign, currency)| s.strip_prefix(sign).map(|rest| (rest, currency)));
        let (amount, currency) = match signed {
            Some((amount, currency)) => (amount, currency),
            None => {
                let (a, b) = s.split_once(' ').ok_or_else(|| MoneyError::Amount {
                    text: s.chars().take(32).collect(),
                })?;
                let (a, b) = (a.trim(), b.trim());
                match Currency::new(b) {
                    Ok(currency) => (a, currency),
                    Err(_) => (b, Currency::new(a)?),
                }
            }
        };
        Ok(Self::from_micros(parse_micros(amount)?, currency))
    }
}

/// The number of millionths in a decimal amount (`"2.50"` is 2 500 000), read exactly.
///
/// ```
/// assert_eq!(rein_run::parse_micros("2.5")?, 2_500_000);
/// assert_eq!(rein_run::parse_micros("0.000001")?, 1);
/// assert!(rein_run::parse_micros("0.0000001").is_err()); // finer than a millionth
/// assert!(rein_run::parse_micros("-1").is_err());
/// # Ok::<(), rein_run::MoneyError>(())
/// ```
///
/// # Errors
/// [`MoneyError::Amount`] for anything but digits with at most one point and six decimals.
pub fn parse_micros(text: &str) -> Result<u64, MoneyError> {
    let bad = || MoneyError::Amount {
        text: text.chars().take(32).collect(),
    };
    let (units, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (units.is_empty() && fraction.is_empty())
        || !digits(units)
        || !digits(fraction)
        || fraction.len() > 6
    {
        return Err(bad());
    }
    let units: u64 = if units.is_empty() {
        0
    } else {
        units.parse().map_err(|_| bad())?
    };
    let fraction: u64 = format!("{fraction:0<6}").parse().map_err(|_| bad())?;
    units
        .checked_mul(MICROS)
        .and_then(|u| u.checked_add(fraction))
        .ok_or_else(bad)
}

/// What something cost: an amount of money, or unknown (a model without a price — never
/// taken for free).
///
/// ```
/// use rein_run::{Cost, Currency, Money};
/// let known = Cost::Known(Money::from_micros(3_500, Currency::USD));
/// assert_eq!(known.to_string(), "$0.0035");
/// assert_eq!(Cost::Unknown.to_string(), "unknown");
/// assert_eq!(known.plus(Cost::Unknown), Cost::Unknown);
/// assert_eq!(known.plus(known).to_string(), "$0.007");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Cost {
    /// Nobody can say: the model has no price.
    #[default]
    Unknown,
    /// This much.
    Known(Money),
}

impl Cost {
    /// The amount in millionths of its currency, when known.
    #[must_use]
    pub const fn micros(&self) -> Option<u64> {
        match self {
            Self::Unknown => None,
            Self::Known(m) => Some(m.micros),
        }
    }

    /// What the `cost` budget is charged (millionths of its currency): the amount, or
    /// nothing for an unknown cost. A run whose `cost` budget would need an unknown cost
    /// is refused before the call ([`PlannerError::Unpriced`](crate::PlannerError::Unpriced)).
    #[must_use]
    pub const fn charged_micros(&self) -> u64 {
        match self {
            Self::Unknown => 0,
            Self::Known(m) => m.micros,
        }
    }

    /// The sum: unknown when either is, or when they are in different currencies (no one
    /// amount says it).
    #[must_use]
    pub fn plus(self, other: Self) -> Self {
        match (self, other) {
            (Self::Known(a), Self::Known(b)) => a.plus(b).map_or(Self::Unknown, Self::Known),
            _ => Self::Unknown,
        }
    }
}

impl fmt::Display for Cost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unknown => f.write_str("unknown"),
            Self::Known(m) => m.fmt(f),
        }
    }
}

/// How a [`Cost`] is written in a ledger entry: the amount in micro-units (`null` when
/// unknown) in the entry's `cost` (or `worst_cost`) field, and its currency in a
/// `currency` field beside it, left out for [`Currency::UNNAMED`] — so entries written
/// before costs named their currency (a bare number) read back, and encode, as they were.
pub(crate) mod wire {
    use super::{Cost, Currency, Money};

    /// The two fields of a cost.
    pub(crate) const fn split(cost: Cost) -> (Option<u64>, Option<Currency>) {
        match cost {
            Cost::Unknown => (None, None),
            Cost::Known(m) if is_unnamed(m.currency) => (Some(m.micros), None),
            Cost::Known(m) => (Some(m.micros), Some(m.currency)),
        }
    }

    /// The cost of the two fields; `None` for a currency without an amount.
    pub(crate) const fn join(micros: Option<u64>, currency: Option<Currency>) -> Option<Cost> {
        match (micros, currency) {
            (None, None) => Some(Cost::Unknown),
            (None, Some(_)) => None,
            (Some(micros), None) => {
                Some(Cost::Known(Money::from_micros(micros, Currency::UNNAMED)))
            }
            (Some(micros), Some(currency)) => {
                Some(Cost::Known(Money::from_micros(micros, currency)))
            }
        }
    }

    const fn is_unnamed(c: Currency) -> bool {
        c.0[0] == b'X' && c.0[1] == b'X' && c.0[2] == b'X'
    }
}

/// A currency or an amount that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MoneyError {
    /// Not an ISO 4217 code.
    #[error(
        "`{code}` is not a currency: write its ISO 4217 code, three capital letters like USD or EUR"
    )]
    Currency {
        /// The text given (its first 16 characters).
        code: String,
    },
    /// Not a decimal amount of at most six decimals.
    #[error(
        "`{text}` is not an amount: write a decimal like 2.50 (at most six decimals), and a currency where one is asked (\"2.50 USD\")"
    )]
    Amount {
        /// The text given (its first 32 characters).
        text: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn money_shows_cents_at_least_and_every_digit_below_them() {
        let usd = |m| Money::from_micros(m, Currency::USD).to_string();
        assert_eq!(usd(0), "$0.00");
        assert_eq!(usd(1), "$0.000001");
        assert_eq!(usd(10_000), "$0.01");
        assert_eq!(usd(12_345_678_900), "$12345.6789");
        assert_eq!(
            Money::from_micros(2_000_000, Currency::new("CHF").unwrap()).to_string(),
            "2.00 CHF"
        );
        assert_eq!(
            Money::from_micros(5, Currency::UNNAMED).to_string(),
            "0.000005 XXX"
        );
    }

    #[test]
    fn money_reads_back_what_it_shows() {
        for text in ["$0.0123", "€1.50", "£3.00", "1.50 CHF", "0.000005 XXX"] {
            assert_eq!(text.parse::<Money>().unwrap().to_string(), text);
        }
        assert_eq!(
            "USD 2".parse::<Money>().unwrap(),
            Money::from_micros(2_000_000, Currency::USD)
        );
        for bad in [
            "",
            "1.50",
            "1.5.0 USD",
            "abc USD",
            "1.50 dollars",
            "$-1",
            "$1e3",
        ] {
            assert!(bad.parse::<Money>().is_err(), "{bad}");
        }
        assert!(parse_micros("18446744073710").is_err()); // past u64 in micro-units
    }

    #[test]
    fn sums_are_exact_and_never_mix_currencies() {
        let tenth = Cost::Known(Money::from_micros(100_000, Currency::USD));
        let mut sum = Cost::Known(Money::zero(Currency::USD));
        for _ in 0..10 {
            sum = sum.plus(tenth);
        }
        assert_eq!(sum.to_string(), "$1.00");
        let eur = Cost::Known(Money::from_micros(1, Currency::EUR));
        assert_eq!(sum.plus(eur), Cost::Unknown);
    }

    #[test]
    fn the_wire_form_round_trips_old_bare_numbers() {
        let old = wire::join(Some(4_321), None).unwrap();
        assert_eq!(wire::split(old), (Some(4_321), None));
        let usd = Cost::Known(Money::from_micros(7, Currency::USD));
        assert_eq!(wire::split(usd), (Some(7), Some(Currency::USD)));
        assert_eq!(wire::split(Cost::Unknown), (None, None));
        assert_eq!(wire::join(None, Some(Currency::USD)), None);
    }
}
