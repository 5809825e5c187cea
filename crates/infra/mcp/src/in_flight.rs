//! The governed calls in flight on one connection: each call registers the run's
//! [`CallScope`] for as long as it runs, so what the server sends meanwhile (a sampling
//! request, progress, a log line) reaches the run the call belongs to — a connection is
//! shared by every run of the process. rmcp gives each request a progress token of its own
//! and does not say which, so what arrives is tied to the call in flight when there is
//! exactly one, and to none while there are several.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rein_tool::CallScope;

/// The calls in flight, each under a number of its own.
#[derive(Default)]
pub(crate) struct InFlight {
    next: AtomicU64,
    calls: Mutex<Vec<(u64, Arc<dyn CallScope>)>>,
}

/// Which call a request arrived during.
pub(crate) enum During {
    /// No governed call is in flight.
    None,
    /// Exactly one is: its scope.
    One(Arc<dyn CallScope>),
    /// Several are: the request cannot be tied to one of them.
    Several(usize),
}

/// A call's registration, removed when the call ends (or is dropped).
pub(crate) struct Registered {
    owner: Arc<InFlight>,
    /// The call's number.
    pub(crate) token: u64,
}

impl InFlight {
    /// Registers `scope` for the call about to be sent.
    pub(crate) fn register(self: &Arc<Self>, scope: Arc<dyn CallScope>) -> Registered {
        let token = self.next.fetch_add(1, Ordering::Relaxed).saturating_add(1);
        self.lock().push((token, scope));
        Registered {
            owner: Arc::clone(self),
            token,
        }
    }

    /// The call a request arrived during.
    pub(crate) fn during(&self) -> During {
        let calls = self.lock();
        match calls.as_slice() {
            [] => During::None,
            [(_, scope)] => During::One(Arc::clone(scope)),
            several => During::Several(several.len()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(u64, Arc<dyn CallScope>)>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.owner.lock().retain(|(t, _)| *t != self.token);
    }
}

#[cfg(test)]
mod tests {
    use rein_tool::{BoxFuture, SampleError, SampleReply, SampleRequest, ToolNotice};
    use serde_json::json;

    use super::*;
    use crate::asks::Asks;

    /// A run that refuses every request, and finds no call in the current task.
    struct Quiet;

    impl CallScope for Quiet {
        fn sample(&self, _: SampleRequest) -> BoxFuture<'_, Result<SampleReply, SampleError>> {
            Box::pin(async { Err(SampleError::Refused("quiet".to_owned())) })
        }
        fn notice(&self, _: ToolNotice) {}
    }

    impl rein_tool::CallScopes for Quiet {
        fn current(&self) -> Option<Arc<dyn CallScope>> {
            None
        }
    }

    #[test]
    fn a_request_is_tied_to_the_only_call_in_flight_and_to_none_of_several() {
        let calls = Arc::new(InFlight::default());
        assert!(matches!(calls.during(), During::None));
        let first = calls.register(Arc::new(Quiet));
        assert!(matches!(calls.during(), During::One(_)));
        let second = calls.register(Arc::new(Quiet));
        assert_ne!(first.token, second.token);
        assert!(matches!(calls.during(), During::Several(2)));
        drop(first);
        assert!(matches!(calls.during(), During::One(_)));
        drop(second);
        assert!(matches!(calls.during(), During::None));
    }

    #[tokio::test]
    async fn sampling_with_no_call_or_several_in_flight_is_refused_with_a_reason() {
        let asks = Asks {
            scopes: Some(Arc::new(Quiet)),
            run_sampling: true,
            ..Asks::default()
        };
        let params = json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 10});
        let calls = Arc::new(InFlight::default());
        let none = crate::asks::sample(&asks, &calls, "docs", params.clone())
            .await
            .unwrap_err();
        assert!(
            none.message
                .contains("no governed call of server `docs` is in flight"),
            "{none:?}"
        );
        let _a = calls.register(Arc::new(Quiet));
        let _b = calls.register(Arc::new(Quiet));
        let several = crate::asks::sample(&asks, &calls, "docs", params)
            .await
            .unwrap_err();
        assert!(
            several
                .message
                .contains("2 calls of server `docs` are in flight"),
            "{several:?}"
        );
    }
}
