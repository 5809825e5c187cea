//! `Prices`: what each model's tokens cost, in one currency, so a model call's cost is
//! exact money (or unknown for a model without a price, never zero).

use std::collections::BTreeMap;
use std::fmt;

use rein_run::{Cost, Currency, Money, parse_micros};
use serde::{Deserialize, Serialize};

use crate::chat::Usage;

/// The model name whose prices apply to every model not named in [`Prices::models`].
pub const ANY_MODEL: &str = "*";

/// The prices of the models a planner may call (its primary and fallbacks), in one
/// currency: the currency of the run's `cost` budget.
///
/// ```
/// use rein_llm::{ModelPrices, Prices, Rate, Usage};
/// use rein_run::{Cost, Currency};
///
/// let prices = Prices::new(Currency::USD)
///     .with_model("gpt-4.1-mini", ModelPrices::new("0.40".parse()?, "1.60".parse()?));
/// let usage = Usage { input_tokens: 1_000, output_tokens: 100, ..Usage::default() };
/// assert_eq!(prices.cost("gpt-4.1-mini", &usage).to_string(), "$0.00056");
/// assert_eq!(prices.cost("another-model", &usage), Cost::Unknown);
///
/// // In a scenario file or any JSON configuration:
/// let read: Prices = serde_json::from_str(
///     r#"{"currency": "USD", "models": {"gpt-4.1-mini": {"input": "0.40", "output": "1.60"}}}"#,
/// )?;
/// assert_eq!(read, prices);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "PricesRecord")]
pub struct Prices {
    /// The currency of every price here.
    pub currency: Currency,
    /// Each model's prices, by the model's name as the provider configuration gives it;
    /// [`ANY_MODEL`] (`"*"`) prices every model not named.
    pub models: BTreeMap<String, ModelPrices>,
}

/// One model's prices per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrices {
    /// Per million input (prompt) tokens not read from or written to the prompt cache.
    pub input: Rate,
    /// Per million output (generated) tokens.
    pub output: Rate,
    /// Per million input tokens read from the provider's prompt cache; none: `input`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<Rate>,
    /// Per million input tokens written to the provider's prompt cache; none: `input`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<Rate>,
}

/// A price per million tokens, exactly: integer micro-units of the currency. Written as a
/// decimal (`"2.50"`, or the number `2.5`), at most six decimals.
///
/// ```
/// use rein_llm::Rate;
/// let rate: Rate = "2.5".parse()?;
/// assert_eq!(rate.micros_per_million(), 2_500_000);
/// assert_eq!(rate.to_string(), "2.50");
/// assert_eq!(serde_json::from_str::<Rate>("2.5")?, rate);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Rate(u64);

/// A model without a price where one is needed: a run with a `cost` budget would not know
/// what its calls cost.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "model `{model}` has no price, so a `cost` budget cannot bind its calls; price it in the planner's \"prices\": {{\"currency\": \"USD\", \"models\": {{\"{model}\": {{\"input\": \"2.50\", \"output\": \"10.00\"}}}}}} (per million tokens; \"cache_read\" and \"cache_write\" optional), or drop the `cost` budget"
)]
pub struct UnpricedModel {
    /// The model.
    pub model: String,
}

impl Prices {
    /// No model priced yet, in `currency`.
    #[must_use]
    pub const fn new(currency: Currency) -> Self {
        Self {
            currency,
            models: BTreeMap::new(),
        }
    }

    /// The same, pricing `model` ([`ANY_MODEL`] for every model not named).
    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>, prices: ModelPrices) -> Self {
        self.models.insert(model.into(), prices);
        self
    }

    /// The prices of `model`: its own, or those of [`ANY_MODEL`].
    #[must_use]
    pub fn of(&self, model: &str) -> Option<&ModelPrices> {
        self.models
            .get(model)
            .or_else(|| self.models.get(ANY_MODEL))
    }

    /// What `usage` cost on `model`; unknown when `model` has no price.
    #[must_use]
    pub fn cost(&self, model: &str, usage: &Usage) -> Cost {
        self.of(model).map_or(Cost::Unknown, |p| {
            Cost::Known(Money::from_micros(p.micros(usage), self.currency))
        })
    }

    /// The most a call to `model` with `input` prompt tokens and `output` generated ones
    /// could cost, whether its input is read from the cache, written to it, or neither.
    #[must_use]
    pub fn worst_cost(&self, model: &str, input: u64, output: u64) -> Cost {
        self.of(model).map_or(Cost::Unknown, |p| {
            let dearest = [Some(p.input), p.cache_read, p.cache_write]
                .into_iter()
                .flatten()
                .max()
                .unwrap_or(p.input);
            let usage = Usage {
                input_tokens: input,
                output_tokens: output,
                ..Usage::default()
            };
            let p = ModelPrices {
                input: dearest,
                ..*p
            };
            Cost::Known(Money::from_micros(p.micros(&usage), self.currency))
        })
    }

    /// Checks that every one of `models` has a price.
    ///
    /// # Errors
    /// [`UnpricedModel`] naming the first that has none.
    pub fn check_priced<'a>(
        prices: Option<&Self>,
        models: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), UnpricedModel> {
        for model in models {
            if prices.and_then(|p| p.of(model)).is_none() {
                return Err(UnpricedModel {
                    model: model.to_owned(),
                });
            }
        }
        Ok(())
    }
}

impl ModelPrices {
    /// Input and output prices; cached input at the input price.
    #[must_use]
    pub const fn new(input: Rate, output: Rate) -> Self {
        Self {
            input,
            output,
            cache_read: None,
            cache_write: None,
        }
    }

    /// The same, with prices for tokens read from and written to the prompt cache.
    #[must_use]
    pub const fn with_cache(mut self, read: Rate, write: Rate) -> Self {
        self.cache_read = Some(read);
        self.cache_write = Some(write);
        self
    }

    /// What `usage` costs, in micro-units, rounded up.
    fn micros(&self, usage: &Usage) -> u64 {
        let read = usage.cache_read_tokens.min(usage.input_tokens);
        let written = usage.cache_write_tokens.min(usage.input_tokens - read);
        let plain = usage.input_tokens - read - written;
        let at = |tokens: u64, rate: Rate| u128::from(tokens) * u128::from(rate.0);
        let total = at(plain, self.input)
            + at(read, self.cache_read.unwrap_or(self.input))
            + at(written, self.cache_write.unwrap_or(self.input))
            + at(usage.output_tokens, self.output);
        u64::try_from(total.div_ceil(1_000_000)).unwrap_or(u64::MAX)
    }
}

impl Rate {
    /// `micros` millionths of the currency per million tokens (a micro-unit per token).
    #[must_use]
    pub const fn from_micros_per_million(micros: u64) -> Self {
        Self(micros)
    }

    /// The price in millionths of the currency per million tokens.
    #[must_use]
    pub const fn micros_per_million(&self) -> u64 {
        self.0
    }
}

impl std::str::FromStr for Rate {
    type Err = rein_run::MoneyError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_micros(s.trim()).map(Self)
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The amount as money shows it, without the currency.
        let shown = Money::from_micros(self.0, Currency::UNNAMED).to_string();
        f.write_str(shown.trim_end_matches(" XXX"))
    }
}

impl Serialize for Rate {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(RateVisitor)
    }
}

struct RateVisitor;

impl serde::de::Visitor<'_> for RateVisitor {
    type Value = Rate;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a price per million tokens, as a decimal (\"2.50\" or 2.5)")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Rate, E> {
        v.parse().map_err(E::custom)
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Rate, E> {
        v.checked_mul(1_000_000)
            .map(Rate)
            .ok_or_else(|| E::custom(format!("the price {v} per million tokens is too large")))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Rate, E> {
        u64::try_from(v)
            .map_err(|_| E::custom(format!("the price {v} is negative: a price is 0 or more")))
            .and_then(|v| self.visit_u64(v))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Rate, E> {
        // Its shortest decimal form is the text the file has: read that exactly.
        self.visit_str(&v.to_string())
    }
}

/// [`Prices`] as a configuration writes them: `{"currency", "models"}`, or the form before
/// prices named a currency and a model (`{"input_per_million", "output_per_million"}` in
/// micro-units), read as the price of every model in [`Currency::UNNAMED`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PricesRecord {
    currency: Option<Currency>,
    models: Option<BTreeMap<String, ModelPrices>>,
    input_per_million: Option<u64>,
    output_per_million: Option<u64>,
}

/// Prices written in neither form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "prices are {{\"currency\": \"USD\", \"models\": {{\"MODEL\": {{\"input\": \"2.50\", \"output\": \"10.00\"}}}}}} (per million tokens; \"*\" for every other model)"
)]
pub struct PricesShape;

impl TryFrom<PricesRecord> for Prices {
    type Error = PricesShape;
    fn try_from(r: PricesRecord) -> Result<Self, Self::Error> {
        match r {
            PricesRecord {
                currency: Some(currency),
                models: Some(models),
                input_per_million: None,
                output_per_million: None,
            } => Ok(Self { currency, models }),
            PricesRecord {
                currency: None,
                models: None,
                input_per_million: Some(input),
                output_per_million: Some(output),
            } => Ok(Self::new(Currency::UNNAMED).with_model(
                ANY_MODEL,
                ModelPrices::new(
                    Rate::from_micros_per_million(input),
                    Rate::from_micros_per_million(output),
                ),
            )),
            _ => Err(PricesShape),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, output: u64, read: u64, write: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            cache_read_tokens: read,
            cache_write_tokens: write,
        }
    }

    #[test]
    fn cached_input_is_priced_at_its_own_rates() {
        let rate = |s: &str| s.parse::<Rate>().unwrap();
        let p = Prices::new(Currency::USD).with_model(
            "m",
            ModelPrices::new(rate("3"), rate("15")).with_cache(rate("0.30"), rate("3.75")),
        );
        // 1000 plain, 8000 read, 1000 written, 500 out:
        // 0.003 + 0.0024 + 0.00375 + 0.0075 = 0.01665
        let cost = p.cost("m", &usage(10_000, 500, 8_000, 1_000));
        assert_eq!(cost.to_string(), "$0.01665");
        // The worst case prices every input token at the dearest input rate.
        assert_eq!(p.worst_cost("m", 10_000, 500).to_string(), "$0.045");
        // Counts a provider reports inconsistently never underflow.
        let odd = p.cost("m", &usage(10, 0, 50, 50));
        assert_eq!(odd.micros(), Some(3));
    }

    #[test]
    fn the_form_before_currencies_reads_as_every_model_in_no_named_currency() {
        let old: Prices =
            serde_json::from_str(r#"{"input_per_million": 2500000, "output_per_million": 1}"#)
                .unwrap();
        assert_eq!(old.currency, Currency::UNNAMED);
        assert_eq!(
            old.of("anything").unwrap().input,
            Rate::from_micros_per_million(2_500_000)
        );
        let mixed = serde_json::from_str::<Prices>(
            r#"{"currency": "USD", "models": {}, "input_per_million": 1}"#,
        )
        .unwrap_err();
        assert!(mixed.to_string().contains("prices are"), "{mixed}");
        // What it writes reads back.
        let again: Prices = serde_json::from_value(serde_json::to_value(&old).unwrap()).unwrap();
        assert_eq!(again, old);
    }

    #[test]
    fn an_unpriced_model_is_named() {
        let p = Prices::new(Currency::EUR)
            .with_model("a", ModelPrices::new(Rate::default(), Rate::default()));
        assert_eq!(Prices::check_priced(Some(&p), ["a"]), Ok(()));
        let e = Prices::check_priced(Some(&p), ["a", "b"]).unwrap_err();
        assert_eq!(e.model, "b");
        assert!(e.to_string().contains("model `b` has no price"));
        assert!(Prices::check_priced(None, ["a"]).is_err());
        for bad in [r#""-1""#, "-1", r#""1e3""#, "0.0000001"] {
            assert!(serde_json::from_str::<Rate>(bad).is_err(), "{bad}");
        }
    }
}
