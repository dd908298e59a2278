//! [`ErrorClass`]: the coarse outcome every library error reports through its `class()`
//! method. Entry points never match on an error's variants or message text to decide what to
//! answer; they take its class and look it up in the one edge table (`yoi_engine::edge`), which
//! gives the CLI exit code and the HTTP status together so the two frontends cannot drift.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// Malformed request or argument: the caller must correct it.
    Invalid,
    /// The named ticket, skill, relation, proposal or assignment does not exist.
    NotFound,
    /// This principal may not do this (a human-only step asked by a pod, a pod asking for
    /// another role's work). Every principal refusal has this class, wherever it is decided.
    NotPermitted,
    /// The record is not in a state that allows it (stale, blocked, replay conflict, cycle,
    /// already decided, a stale fence).
    Conflict,
    /// A guard refused the request as given (brief incomplete, self relation, an invalid skill).
    Refused,
    /// What was asked for is larger than the bound yoi serves.
    TooLarge,
    /// A file on disk is malformed.
    Corrupt,
    /// The workspace lock could not be had in time; try again.
    Busy,
    /// The workspace or repository is missing or set up wrongly.
    Setup,
    /// Anything else: an I/O or database failure, a broken invariant.
    Internal,
}

impl ErrorClass {
    /// Every class, for tables and their tests.
    pub const ALL: [ErrorClass; 10] = [
        ErrorClass::Invalid,
        ErrorClass::NotFound,
        ErrorClass::NotPermitted,
        ErrorClass::Conflict,
        ErrorClass::Refused,
        ErrorClass::TooLarge,
        ErrorClass::Corrupt,
        ErrorClass::Busy,
        ErrorClass::Setup,
        ErrorClass::Internal,
    ];

    /// The API's `error.code` for an error of this class that has no more precise code of its
    /// own (`StoreError::code` and the engine errors' `code` give the precise ones).
    pub const fn code(self) -> &'static str {
        match self {
            ErrorClass::Invalid => "invalid",
            ErrorClass::NotFound => "not_found",
            ErrorClass::NotPermitted => "forbidden",
            ErrorClass::Conflict => "conflict",
            ErrorClass::Refused => "refused",
            ErrorClass::TooLarge => "too_large",
            ErrorClass::Corrupt => "corrupt_file",
            ErrorClass::Busy => "locked",
            ErrorClass::Setup | ErrorClass::Internal => "internal",
        }
    }
}
