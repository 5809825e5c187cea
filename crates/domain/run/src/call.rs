//! `PlannerCall`, `PlannerAttempt` and `WorstCase`: one model call as a planner announces
//! it, reports it and bounds it, and how each is written in its ledger entry.

use serde::{Deserialize, Serialize};

use crate::money::wire;
use crate::{Cost, Currency, Digest, ModelReply};

/// One model call, as the planner reports it. The engine records it as a `planner_call`
/// ledger entry and charges `tokens` (input + output) and `cost`.
///
/// The fields added after the first version (`currency`, `cache_read_tokens`,
/// `cache_write_tokens`, `reply`) are left out of the entry when zero or absent, so every
/// earlier ledger encodes and verifies as it did. The cost is written as its amount in
/// micro-units (`null` when unknown) and its currency beside it; an entry written before
/// costs named their currency reads as an amount in [`Currency::UNNAMED`].
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "CallRecord")]
pub struct PlannerCall {
    /// The provider (`openai`, `anthropic`, a team's own).
    pub provider: String,
    /// The model.
    pub model: String,
    /// The SHA-256 of the exact request body sent.
    pub request_hash: Digest,
    /// Prompt tokens, as the provider reported them, those read from or written to the
    /// provider's prompt cache included.
    pub input_tokens: u64,
    /// Generated tokens, as the provider reported them.
    pub output_tokens: u64,
    /// What the call cost at the model's prices; unknown for a model without a price.
    pub cost: Cost,
    /// Wall time of the call, in milliseconds.
    pub latency_ms: u64,
    /// Why the model stopped, as the provider said.
    pub finish_reason: Option<String>,
    /// Of `input_tokens`, those read from the provider's prompt cache.
    pub cache_read_tokens: u64,
    /// Of `input_tokens`, those written to the provider's prompt cache.
    pub cache_write_tokens: u64,
    /// What the model answered, as the planner shows it to the model in later steps: the
    /// prompt is a projection of the ledger, so its replies are on the record.
    pub reply: Option<ModelReply>,
}

/// A [`PlannerCall`] as its entry writes it (borrowed: encoding copies nothing).
#[derive(Serialize)]
struct CallOut<'a> {
    provider: &'a str,
    model: &'a str,
    request_hash: &'a Digest,
    input_tokens: u64,
    output_tokens: u64,
    cost: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    currency: Option<Currency>,
    latency_ms: u64,
    finish_reason: Option<&'a str>,
    #[serde(skip_serializing_if = "is_zero")]
    cache_read_tokens: u64,
    #[serde(skip_serializing_if = "is_zero")]
    cache_write_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    reply: Option<&'a ModelReply>,
}

/// A [`PlannerCall`] as an entry holds it, old or new.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallRecord {
    provider: String,
    model: String,
    request_hash: Digest,
    input_tokens: u64,
    output_tokens: u64,
    cost: Option<u64>,
    #[serde(default)]
    currency: Option<Currency>,
    latency_ms: u64,
    finish_reason: Option<String>,
    #[serde(default)]
    cache_read_tokens: u64,
    #[serde(default)]
    cache_write_tokens: u64,
    #[serde(default)]
    reply: Option<ModelReply>,
}

/// A `currency` given without an amount.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "a cost names a currency but no amount: give both (\"cost\": 1500, \"currency\": \"USD\") or neither (unknown)"
)]
pub struct CurrencyWithoutAmount;

impl Serialize for PlannerCall {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (cost, currency) = wire::split(self.cost);
        CallOut {
            provider: &self.provider,
            model: &self.model,
            request_hash: &self.request_hash,
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            cost,
            currency,
            latency_ms: self.latency_ms,
            finish_reason: self.finish_reason.as_deref(),
            cache_read_tokens: self.cache_read_tokens,
            cache_write_tokens: self.cache_write_tokens,
            reply: self.reply.as_ref(),
        }
        .serialize(s)
    }
}

impl TryFrom<CallRecord> for PlannerCall {
    type Error = CurrencyWithoutAmount;
    fn try_from(r: CallRecord) -> Result<Self, Self::Error> {
        Ok(Self {
            cost: wire::join(r.cost, r.currency).ok_or(CurrencyWithoutAmount)?,
            provider: r.provider,
            model: r.model,
            request_hash: r.request_hash,
            input_tokens: r.input_tokens,
            output_tokens: r.output_tokens,
            latency_ms: r.latency_ms,
            finish_reason: r.finish_reason,
            cache_read_tokens: r.cache_read_tokens,
            cache_write_tokens: r.cache_write_tokens,
            reply: r.reply,
        })
    }
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
const fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl PlannerCall {
    /// Input plus output tokens.
    #[must_use]
    pub const fn tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

/// The most one call could spend: its prompt estimate plus its maximum output, and what
/// that would cost at the model's prices (unknown for a model without a price).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorstCase {
    /// Tokens.
    pub tokens: u64,
    /// Cost.
    pub cost: Cost,
}

/// One model call about to be sent, as the planner announces it: the engine records it as a
/// `planner_attempt` entry, durably, before the request goes out. An attempt the ledger
/// shows without an outcome (the process stopped mid-call) is charged at its worst case.
///
/// Its worst cost is written as [`PlannerCall`]'s cost is: `worst_cost` in micro-units
/// (`null` when unknown) and `currency` beside it, left out for [`Currency::UNNAMED`].
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "AttemptRecord")]
pub struct PlannerAttempt {
    /// The attempt's number within its model call (from 1; every retry is its own attempt).
    pub attempt: u32,
    /// The provider (`openai`, `anthropic`, a team's own).
    pub provider: String,
    /// The model.
    pub model: String,
    /// The SHA-256 of the exact request body about to be sent.
    pub request_hash: Digest,
    /// The most tokens the attempt could spend (prompt estimate plus maximum output).
    pub worst_tokens: u64,
    /// The most the attempt could cost; unknown for a model without a price.
    pub worst_cost: Cost,
}

/// A [`PlannerAttempt`] as its entry writes it.
#[derive(Serialize)]
struct AttemptOut<'a> {
    attempt: u32,
    provider: &'a str,
    model: &'a str,
    request_hash: &'a Digest,
    worst_tokens: u64,
    worst_cost: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    currency: Option<Currency>,
}

/// A [`PlannerAttempt`] as an entry holds it, old or new.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AttemptRecord {
    attempt: u32,
    provider: String,
    model: String,
    request_hash: Digest,
    worst_tokens: u64,
    worst_cost: Option<u64>,
    #[serde(default)]
    currency: Option<Currency>,
}

impl Serialize for PlannerAttempt {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (worst_cost, currency) = wire::split(self.worst_cost);
        AttemptOut {
            attempt: self.attempt,
            provider: &self.provider,
            model: &self.model,
            request_hash: &self.request_hash,
            worst_tokens: self.worst_tokens,
            worst_cost,
            currency,
        }
        .serialize(s)
    }
}

impl TryFrom<AttemptRecord> for PlannerAttempt {
    type Error = CurrencyWithoutAmount;
    fn try_from(r: AttemptRecord) -> Result<Self, Self::Error> {
        Ok(Self {
            worst_cost: wire::join(r.worst_cost, r.currency).ok_or(CurrencyWithoutAmount)?,
            attempt: r.attempt,
            provider: r.provider,
            model: r.model,
            request_hash: r.request_hash,
            worst_tokens: r.worst_tokens,
        })
    }
}
