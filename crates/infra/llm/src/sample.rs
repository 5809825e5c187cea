//! A tool's sampling request answered by the LLM planner's model: the request becomes a
//! chat without functions, sent through [`LlmPlanner::call`] so that every attempt is
//! declared against the run's meter before it goes out (refused when its worst case does
//! not fit) and its usage reported for the engine to charge and record.

use rein_run::{PlanMeter, PlannerError};
use rein_tool::{SampleError, SampleReply, SampleRequest, SampleRole};

use crate::chat::{ChatRequest, Message};
use crate::planner::LlmPlanner;

/// The system prompt of a sampling request that names none.
const NO_SYSTEM: &str = "You answer a request a tool made while it runs. Reply with text only.";

/// Answers `request` with `planner`'s model, metered by `meter`.
pub(crate) async fn answer(
    planner: &LlmPlanner,
    request: &SampleRequest,
    meter: &PlanMeter,
) -> Result<SampleReply, SampleError> {
    let chat = ChatRequest {
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
    };
    let mut attempts = 0;
    let completion = match planner.call(&chat, Some(meter), &mut attempts).await {
        Ok(Ok(completion)) => completion,
        Ok(Err(error)) => return Err(SampleError::Failed(error.to_string())),
        Err(PlannerError::OverBudget(exhausted)) => {
            return Err(SampleError::Budget {
                budget: exhausted.name.to_string(),
            });
        }
        Err(other) => return Err(SampleError::Refused(other.to_string())),
    };
    let response = completion.response;
    Ok(SampleReply {
        model: response
            .model
            .clone()
            .unwrap_or_else(|| planner.model().to_owned()),
        text: response.text,
        stop_reason: response.finish_reason.as_deref().map(stop_reason),
    })
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
