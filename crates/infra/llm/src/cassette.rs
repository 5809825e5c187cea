//! Record and replay: [`CassetteRecorder`] wraps any provider and appends each
//! request/reply pair to a cassette (JSON lines); [`Replayer`] serves them back, keyed by
//! the SHA-256 of the exact request body, and fails loudly on a request it has not seen.
//! No network.

use std::collections::{HashMap, VecDeque};
use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use rein_run::Digest;
use serde::{Deserialize, Serialize};

use crate::chat::ChatRequest;
use crate::config::ProviderConfig;
use crate::error::LlmError;
use crate::http::request_body;
use crate::provider::{AttemptHook, Completion, DynProvider, Provider};

/// One line of a cassette.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recorded {
    /// The provider's name.
    pub provider: String,
    /// The model.
    pub model: String,
    /// The request, provider-neutral (its body's hash is in `completion`).
    pub request: ChatRequest,
    /// What came back.
    pub completion: Completion,
}

/// Wraps a provider and records every successful call to a cassette file.
///
/// Writes are small appends made while the call's future runs (the file is a test and
/// debugging aid, not a hot path).
pub struct CassetteRecorder {
    inner: Box<dyn DynProvider>,
    path: PathBuf,
    file: Mutex<()>,
}

impl std::fmt::Debug for CassetteRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CassetteRecorder")
            .field("provider", &self.inner.name())
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl CassetteRecorder {
    /// Records the calls of `inner` to `path` (appended; created when missing).
    #[must_use]
    pub fn new(inner: impl Provider, path: impl Into<PathBuf>) -> Self {
        Self {
            inner: Box::new(inner),
            path: path.into(),
            file: Mutex::new(()),
        }
    }

    fn append(&self, line: &Recorded) -> Result<(), LlmError> {
        let error = |source| LlmError::Cassette {
            path: self.path.display().to_string(),
            source,
        };
        let mut text = serde_json::to_string(line).map_err(|e| error(e.into()))?;
        text.push('\n');
        let _guard = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .map_err(error)
    }
}

impl Provider for CassetteRecorder {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn model(&self) -> &str {
        self.inner.model()
    }

    fn max_output_tokens(&self) -> u32 {
        self.inner.max_output_tokens()
    }

    async fn complete(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        let completion = self.inner.complete_boxed(request).await?;
        self.keep(request, completion)
    }

    fn request_hash(&self, request: &ChatRequest) -> Digest {
        self.inner.request_hash_dyn(request)
    }

    async fn complete_with(
        &self,
        request: &ChatRequest,
        hook: &dyn AttemptHook,
    ) -> Result<Completion, LlmError> {
        let completion = self.inner.complete_with_boxed(request, hook).await?;
        self.keep(request, completion)
    }
}

impl CassetteRecorder {
    fn keep(&self, request: &ChatRequest, completion: Completion) -> Result<Completion, LlmError> {
        self.append(&Recorded {
            provider: self.inner.name().to_owned(),
            model: self.inner.model().to_owned(),
            request: request.clone(),
            completion: completion.clone(),
        })?;
        Ok(completion)
    }
}

/// Serves a cassette back. It builds each request's body exactly as the recorded provider's
/// configuration would, and answers with the reply recorded for that body's hash (in
/// recorded order when one request was made several times).
#[derive(Debug)]
pub struct Replayer {
    config: ProviderConfig,
    replies: Mutex<HashMap<Digest, VecDeque<Completion>>>,
}

impl Replayer {
    /// Loads the cassette at `path`, recorded with `config`.
    ///
    /// # Errors
    /// [`LlmError::Cassette`] when the file cannot be read, [`LlmError::CassetteLine`]
    /// when a line is not a recording.
    pub fn open(path: impl AsRef<Path>, config: ProviderConfig) -> Result<Self, LlmError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| LlmError::Cassette {
            path: path.display().to_string(),
            source,
        })?;
        let mut replies: HashMap<Digest, VecDeque<Completion>> = HashMap::new();
        for (n, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let recorded: Recorded =
                serde_json::from_str(line).map_err(|source| LlmError::CassetteLine {
                    path: path.display().to_string(),
                    line: n + 1,
                    source,
                })?;
            replies
                .entry(recorded.completion.request_hash)
                .or_default()
                .push_back(recorded.completion);
        }
        Ok(Self {
            config,
            replies: Mutex::new(replies),
        })
    }
}

impl Provider for Replayer {
    fn name(&self) -> &str {
        self.config.api.as_str()
    }

    fn model(&self) -> &str {
        &self.config.model
    }

    fn max_output_tokens(&self) -> u32 {
        self.config.max_output_tokens
    }

    fn request_hash(&self, request: &ChatRequest) -> Digest {
        Digest::of_bytes(&request_body(&self.config, request))
    }

    async fn complete(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        let hash = Provider::request_hash(self, request);
        let mut replies = self.replies.lock().unwrap_or_else(PoisonError::into_inner);
        let queue = replies
            .get_mut(&hash)
            .filter(|q| !q.is_empty())
            .ok_or(LlmError::NotRecorded { hash })?;
        // The last reply for a request stays: a replay may ask it once more.
        let completion = if queue.len() > 1 {
            queue.pop_front()
        } else {
            queue.front().cloned()
        };
        completion.ok_or(LlmError::NotRecorded { hash })
    }
}
