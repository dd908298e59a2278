//! The token a pod hands its agent: good for one live claim and nothing else.
//!
//! `yoia_<assignment>.<fence>.<mac>`, where the mac is HMAC-SHA-256 of `<assignment>.<fence>`
//! under the server's key (`.yoi/local/agent.key`). Nothing is stored: the server checks the
//! signature and then that the claim is still live at that fence, so the token stops working the
//! moment the attempt ends, expires or is handed out again — no revocation to forget. With it an
//! agent may read tickets and skills and activate skills for its own assignment; it cannot
//! claim, report, or act for the pod (its pod's token never reaches it).

use yoi_db::{Assignment, AssignmentStatus, DbIndex};

use super::AssignmentError;

const PREFIX: &str = "yoia_";

/// The agent token for attempt `a` under `key`.
pub fn mint(key: &[u8], a: &Assignment) -> String {
    let body = format!("{}.{}", a.id, a.fence);
    format!(
        "{PREFIX}{body}.{}",
        yoi_core::hmac_sha256_hex(key, body.as_bytes())
    )
}

/// Whether `secret` has the form of an agent token (and so must be checked by [`live_claim_of`]).
pub fn is_agent_token(secret: &str) -> bool {
    secret.starts_with(PREFIX)
}

/// Why an agent token is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentRefusal {
    /// Not signed by this server's key, or not of the form.
    Invalid,
    /// Signed, but its claim ended (or moved to a newer fence).
    Ended { id: String },
}

/// The live claim an agent token speaks for, at `now_ms`.
pub fn live_claim_of(
    index: &DbIndex,
    key: &[u8],
    secret: &str,
    now_ms: i64,
) -> Result<Result<Assignment, AgentRefusal>, AssignmentError> {
    let Some((id, fence)) = parse(key, secret) else {
        return Ok(Err(AgentRefusal::Invalid));
    };
    let row = index.assignment(&id)?;
    Ok(match row {
        Some(a)
            if a.fence == fence
                && a.status == AssignmentStatus::Claimed
                && a.lease_until_ms.is_some_and(|l| l >= now_ms) =>
        {
            Ok(a)
        }
        _ => Err(AgentRefusal::Ended { id }),
    })
}

/// The (assignment, fence) a well-signed token names.
fn parse(key: &[u8], secret: &str) -> Option<(String, i64)> {
    let rest = secret.strip_prefix(PREFIX)?;
    let (body, mac) = rest.rsplit_once('.')?;
    let want = yoi_core::hmac_sha256_hex(key, body.as_bytes());
    // Compared in constant time: the mac is the secret part.
    if want.len() != mac.len()
        || want
            .bytes()
            .zip(mac.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            != 0
    {
        return None;
    }
    let (id, fence) = body.rsplit_once('.')?;
    Some((id.to_string(), fence.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_names_its_claim_only_under_the_key_that_signed_it() {
        let a = Assignment {
            id: "asg-01ABC".into(),
            fence: 3,
            ..Assignment::default()
        };
        let t = mint(b"key one", &a);
        assert!(is_agent_token(&t));
        assert_eq!(parse(b"key one", &t), Some(("asg-01ABC".into(), 3)));
        assert_eq!(parse(b"key two", &t), None);
        // Any change to the named claim breaks the signature.
        let forged = t.replacen(".3.", ".4.", 1);
        assert_eq!(parse(b"key one", &forged), None);
        assert_eq!(parse(b"key one", "yoia_asg-01ABC.3"), None);
        assert_eq!(parse(b"key one", "yoi_0123"), None);
    }
}
