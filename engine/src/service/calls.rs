//! How a call is asked for and what it answers, for the gateway and test runs (`exec` runs it).

pub use crate::exec::{
    CALL_SECONDS, CallHooks, CallRequest, CallResult, ExecConfig, Executor, PendingCall, RecordBuffer,
    ResourceUpdated, Status, Subscription,
};
