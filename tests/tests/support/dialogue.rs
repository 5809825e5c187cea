//! Reading the requests an LLM planner sent: the model's own turns and their results.

use rein::llm::Api;
use serde_json::Value;

/// The assistant turns of a request, as (call id, function name) lists, each checked to be
/// answered, id for id and in order, by the results that follow it.
pub(crate) fn turns_with_results(api: Api, body: &Value) -> Vec<Vec<(String, String)>> {
    let messages = body["messages"].as_array().unwrap();
    let mut turns = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        if m["role"] != "assistant" {
            continue;
        }
        let (calls, answered): (Vec<(String, String)>, Vec<String>) = match api {
            Api::OpenAi => (
                m["tool_calls"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| {
                        let id = c["id"].as_str().unwrap().to_owned();
                        (id, c["function"]["name"].as_str().unwrap().to_owned())
                    })
                    .collect(),
                messages[i + 1..]
                    .iter()
                    .take_while(|n| n["role"] == "tool")
                    .map(|n| n["tool_call_id"].as_str().unwrap().to_owned())
                    .collect(),
            ),
            Api::Anthropic => (
                m["content"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|b| b["type"] == "tool_use")
                    .map(|b| {
                        let id = b["id"].as_str().unwrap().to_owned();
                        (id, b["name"].as_str().unwrap().to_owned())
                    })
                    .collect(),
                messages[i + 1]["content"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .take_while(|b| b["type"] == "tool_result")
                    .map(|b| b["tool_use_id"].as_str().unwrap().to_owned())
                    .collect(),
            ),
        };
        let ids: Vec<String> = calls.iter().map(|c| c.0.clone()).collect();
        assert_eq!(ids, answered, "turn {i} is answered call for call: {body}");
        turns.push(calls);
    }
    turns
}
