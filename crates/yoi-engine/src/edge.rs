//! The one table from [`ErrorClass`] to what each frontend answers: the CLI's exit code and
//! the HTTP status. Both frontends read it, so a refused operation exits 1 locally exactly when
//! the server answers it with a refusal status, and no call site picks a status or a code of its
//! own. Every library error reports its class (`StoreError::class`, `GitError::class`, the
//! skills errors, …); `crates/yoi-cli/src/error_edges.rs` asserts the triple (class, exit code,
//! HTTP status) for a value of every variant of every library error.
//!
//! Exit codes: 0 success, 1 a refused or failed operation, 2 a usage error (input the user must
//! correct). Internal and setup errors keep their message out of HTTP bodies (it is logged).

use yoi_core::ErrorClass;

/// What one error class answers at each edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edge {
    pub exit_code: u8,
    pub http_status: u16,
    /// The HTTP body says "internal error; see the server log" instead of the message.
    pub hide_message: bool,
}

/// The table.
pub const fn edge(class: ErrorClass) -> Edge {
    const fn e(exit_code: u8, http_status: u16, hide_message: bool) -> Edge {
        Edge {
            exit_code,
            http_status,
            hide_message,
        }
    }
    match class {
        ErrorClass::Invalid => e(2, 400, false),
        ErrorClass::NotFound => e(1, 404, false),
        ErrorClass::NotPermitted => e(1, 403, false),
        ErrorClass::Conflict => e(1, 409, false),
        ErrorClass::Refused => e(1, 422, false),
        ErrorClass::TooLarge => e(1, 413, false),
        ErrorClass::Corrupt => e(1, 500, false),
        ErrorClass::Busy => e(1, 503, false),
        ErrorClass::Setup => e(1, 500, true),
        ErrorClass::Internal => e(1, 500, true),
    }
}

/// The exit code the CLI gives for an error a server answered with `status`: the exit code of
/// the class the table maps to that status (statuses outside the table exit 1).
pub fn exit_code_for_status(status: u16) -> u8 {
    ErrorClass::ALL
        .iter()
        .map(|c| edge(*c))
        .find(|e| e.http_status == status)
        .map_or(1, |e| e.exit_code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_sharing_a_status_share_an_exit_code() {
        for a in ErrorClass::ALL {
            for b in ErrorClass::ALL {
                if edge(a).http_status == edge(b).http_status {
                    assert_eq!(edge(a).exit_code, edge(b).exit_code, "{a:?} vs {b:?}");
                }
            }
            assert_eq!(exit_code_for_status(edge(a).http_status), edge(a).exit_code);
        }
    }
}
