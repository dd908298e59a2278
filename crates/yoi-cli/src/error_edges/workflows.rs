//! The errors of workflows and their offers at both edges (docs/workflows.md): every
//! `WorkflowError`, `OfferError` and `OffersError` value with its class, exit code, HTTP status
//! and documented API code, through `CliError` and `ApiError` as the CLI and the API answer it
//! (the helpers are the parent's).

use super::*;
use yoi_engine::skill_format::offer::{OfferError, OfferStatus};
use yoi_engine::workflows::offers::OffersError;
use yoi_engine::workflows::WorkflowError;

fn both<E: Into<CliError> + Into<ApiError>>(e: impl Fn() -> E, what: &str, want: Want) {
    cli(e(), what, want);
    api(e(), what, want);
}

const N_WORKFLOW: usize = 8;
fn tag_workflow(e: &WorkflowError) -> usize {
    match e {
        WorkflowError::BadSlug { .. } => 0,
        WorkflowError::Unknown { .. } => 1,
        WorkflowError::Invalid { .. } => 2,
        WorkflowError::NotUserInvocable { .. } => 3,
        WorkflowError::PersonOnly { .. } => 4,
        WorkflowError::NotAutoInvoke { .. } => 5,
        WorkflowError::AttemptOver { .. } => 6,
        WorkflowError::Store(_) => 7,
    }
}

#[test]
fn workflow_error() {
    check(
        "WorkflowError",
        N_WORKFLOW,
        tag_workflow,
        WorkflowError::class,
        cases![
            WorkflowError::BadSlug { slug: s("../x") } => Invalid 2 400,
            WorkflowError::Unknown { slug: s("nope") } => NotFound 1 404,
            WorkflowError::Invalid { slug: s("bad"), problems: vec![s("x")] } => Refused 1 422,
            WorkflowError::NotUserInvocable { slug: s("agents") } => Refused 1 422,
            WorkflowError::PersonOnly { kind: PrincipalKind::Pod } => NotPermitted 1 403,
            WorkflowError::NotAutoInvoke { slug: s("precheck") } => NotPermitted 1 403,
            WorkflowError::AttemptOver { id: s("asg-1") } => Conflict 1 409,
            WorkflowError::Store(StoreError::Resolve(ResolveError::NotFound { query: s("ABCD") })) => NotFound 1 404,
        ],
        |make, what, want| both(make, what, want),
    );
}

const N_OFFER: usize = 10;
fn tag_offer(e: &OfferError) -> usize {
    match e {
        OfferError::BadId { .. } => 0,
        OfferError::NotFound { .. } => 1,
        OfferError::Corrupt { .. } => 2,
        OfferError::MissingField { .. } => 3,
        OfferError::BadTarget { .. } => 4,
        OfferError::AlreadyDecided { .. } => 5,
        OfferError::Stale { .. } => 6,
        OfferError::Tampered { .. } => 7,
        OfferError::Symlink { .. } => 8,
        OfferError::Proposal(_) => 9,
    }
}

#[test]
fn offer_error() {
    check(
        "OfferError",
        N_OFFER,
        tag_offer,
        OfferError::class,
        cases![
            OfferError::BadId { id: s("../x") } => Invalid 2 400,
            OfferError::NotFound { id: s("o1") } => NotFound 1 404,
            OfferError::Corrupt { id: s("o1"), reason: s("bad json") } => Corrupt 1 500,
            OfferError::MissingField { field: "reason" } => Invalid 2 400,
            OfferError::BadTarget { target: s("../x.md") } => Invalid 2 400,
            OfferError::AlreadyDecided { id: s("o1"), status: OfferStatus::Accepted }
                => Conflict 1 409,
            OfferError::Stale { id: s("o1"), target: s("t"), expected: s("a"), found: s("b") }
                => Conflict 1 409,
            OfferError::Tampered { id: s("o1"), expected: s("a"), found: s("b") }
                => Conflict 1 409,
            OfferError::Symlink { target: s(".yoi/workflow/x.md") } => Refused 1 422,
            OfferError::Proposal(ProposalError::Busy { id: s("o1"), lock: "decide.lock" })
                => Busy 1 503,
        ],
        |make, what, want| both(|| OffersError::Offer(make()), what, want),
    );
}

const N_OFFERS: usize = 4;
fn tag_offers(e: &OffersError) -> usize {
    match e {
        OffersError::Offer(_) => 0,
        OffersError::Invalid { .. } => 1,
        OffersError::NotAPerson { .. } => 2,
        OffersError::Store(_) => 3,
    }
}

#[test]
fn offers_error() {
    check(
        "OffersError",
        N_OFFERS,
        tag_offers,
        OffersError::class,
        cases![
            OffersError::Offer(OfferError::NotFound { id: s("o1") }) => NotFound 1 404,
            OffersError::Invalid { id: s("o1"), target: s(".yoi/flows/x.flow.yaml"), problems: vec![s("x")] }
                => Refused 1 422,
            OffersError::Invalid { id: s("o1"), target: s(".yoi/workflow/x.md"), problems: vec![s("x")] }
                => Refused 1 422,
            OffersError::NotAPerson { name: s("yoi") } => NotPermitted 1 403,
            OffersError::Store(StoreError::Resolve(ResolveError::NotFound { query: s("ABCD") })) => NotFound 1 404,
        ],
        |make, what, want| both(make, what, want),
    );
}
