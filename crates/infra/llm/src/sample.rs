//! A tool's sampling request in the LLM planner's terms: the request as a chat without
//! functions, the completion as the tool's reply, a refusal of the meter as a sampling
//! error. The planner sends the chat through its metered call (`LlmPlanner::sample`), so
//! every attempt is declared against the run's meter before it goes out.

use rein_run::PlannerError;
use rein_tool::{SampleError, SampleReply, SampleRequest, SampleRole};

use crate::chat::{ChatRequest, ChatResponse, Message};

/// The system prompt of a sampling request that names none.
const NO_SYSTEM: &str = "You answer a request a tool made while it runs. Reply with text only.";

/// `request` as the chat sent to the model.
pub(crate) fn chat(request: &SampleRequest) -> ChatRequest {
    ChatRequest {
        system: request
            .system
            .clone()
            .unwrap_or_else(|| NO_SYSTEM.to_owned()),
        messages: request
            .messages
            .iter()
            .map(|(role, text)| match role {
                SampleRole::User => Message::User { text: text.clone() },
                SampleRole::Assistant => Message::Assistant {
                    text: text.clone(),
                    calls: Vec::new(),
                },
            })
            .collect(),
        functions: Vec::new(),
    }
}

/// Why the planner's metered call was not made, as a sampling error.
pub(crate) fn refusal(error: PlannerError) -> SampleError {
    match error {
        PlannerError::OverBudget(exhausted) => SampleError::Budget {
            budget: exhausted.name.to_string(),
        },
        other => SampleError::Refused(other.to_string()),
    }
}

/// The model's answer as the tool's reply (`model` when the provider named none).
pub(crate) fn reply(response: ChatResponse, model: &str) -> SampleReply {
    SampleReply {
        model: response.model.unwrap_or_else(|| model.to_owned()),
        text: response.text,
        stop_reason: response.finish_reason.as_deref().map(stop_reason),
    }
}

/// A provider's finish reason in MCP's words (`endTurn`, `maxTokens`, `stopSequence`);
/// another is passed on as the provider said it.
fn stop_reason(finish: &str) -> String {
    match finish {
        "stop" | "end_turn" => "endTurn",
        "length" | "max_tokens" => "maxTokens",
        "stop_sequence" => "stopSequence",
        other => other,
    }
    .to_owned()
}
